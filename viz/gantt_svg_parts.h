// The SVG Gantt chart's parts, for viz/gantt_svg.cc, which puts them together (one concept per
// file): the chart's geometry (gantt_svg_layout.cc), the header and legend
// (gantt_svg_header.cc), the time axis (gantt_svg_axis.cc), the device rows
// (gantt_svg_rows.cc), the microbatch labels (gantt_svg_labels.cc), the idle summary
// (gantt_svg_summary.cc) and the memory charts (gantt_svg_memory.cc). Internal to viz/.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "model/action.h"
#include "model/instance.h"
#include "model/schedule.h"
#include "model/simulator.h"
#include "viz/gantt_svg.h"
#include "viz/svg_markup.h"

namespace optpipe::gantt {

// ---- Geometry (gantt_svg_layout.cc) ------------------------------------------------------------

inline constexpr double kMargin = 14;       // left/right/top padding of the picture
inline constexpr double kLabelColumn = 84;  // device and lane labels left of the plot
inline constexpr double kOpRow = 26;
inline constexpr double kLane = 12;
inline constexpr double kLaneGap = 2;
inline constexpr double kMemCaption = 13;
inline constexpr double kMemChart = 40;
inline constexpr double kLabelLane = 11;  // above each op row: labels of ops too narrow for theirs
inline constexpr double kDeviceGap = 8;
inline constexpr double kAxisLabels = 16;    // tick labels band
inline constexpr double kMakespanBand = 14;  // makespan label band above the tick labels
// The header (title, legend, summary) stays within this width of a wide picture, so that it can
// be read in one window (the script keeps it in view while the plot scrolls).
inline constexpr double kHeaderWidth = 1400;

struct TimeAxis {
  double left = 0, right = 0, end = 1, step = 1;
  int tick_decimals = 0, time_decimals = 2;
  double x(double t) const { return left + (right - left) * t / end; }
  std::string time(double t) const { return svg::fixed(t, time_decimals); }
};

// Top edges (px) of one device's bands; -1 for a band it does not have.
struct DeviceRows {
  double top = 0, lane = 0, op = 0, d2h = -1, h2d = -1, caption = -1, chart = -1, bottom = 0;
};

// One compute op's box in the chart.
struct OpBox {
  int device = 0;
  std::size_t index = 0;  // in the device's list
  OpType type = OpType::F;
  int mb = 0;
  double x = 0, y = 0, w = 0, h = 0;  // h: the part a label may use (above an offload strip)
  svg::Rgb fill;
};

// A microbatch label: inside its op's box, or in the label lane above the op's row.
struct OpLabel {
  std::size_t box = 0;  // index into Chart::ops
  double x = 0, baseline = 0, font = 0;
  bool above = false;
};

struct Chart {
  const Instance& inst;
  const Schedule& sch;
  const SimResult& sim;
  const SvgGanttOptions& opt;
  std::vector<std::vector<int>> stages;  // stages_by_device()
  bool multi_stage = false;
  TimeAxis axis{};
  std::vector<DeviceRows> rows{};
  double width = 0, height = 0;
  double header_right = 0;               // right edge of the header's text: min(width, kHeaderWidth) - kMargin
  double plot_top = 0, plot_bottom = 0;  // grid lines span
  double axis_top = 0;                   // top of the band of the makespan label and top ticks
  double makespan_baseline = 0, top_ticks = 0, bottom_ticks = 0;
  std::vector<OpBox> ops{};              // every compute op that ran, device by device
  std::vector<OpLabel> labels{};
  int label_every = 1;                   // ops without room for their label get one above when mb % this == 0
};

// The picture's width for SvgGanttOptions::width == 0: wide enough that the median compute op
// has room for its microbatch number at kAutoLabelFont, kMinAutoWidth to kMaxAutoWidth px.
inline constexpr int kMinAutoWidth = 1400, kMaxAutoWidth = 20000;
inline constexpr double kAutoLabelFont = 9.5;
double auto_width(const Instance& inst, const Schedule& sch, const SimResult& sim);

Chart make_chart(const Instance& inst, const Schedule& sch, const SimResult& sim, const SvgGanttOptions& opt);
// Lays out the time axis bands and every device from `y` (under the header) down, and the
// picture's height.
void layout_plot(Chart& c, double y);
bool has_transfer(const SimResult& sim, int d, Transfer::Kind kind);
std::string gpu(int d);  // "GPU 3"

// ---- Interaction (gantt_svg_script.cc) -------------------------------------------------------------
// The document's layers, back to front, which the script moves: "gantt-scroll" (the plot; it
// pans both ways, and its groups of class "tx" stretch along the time axis when zooming),
// "gantt-captions" (memory captions: they stay at the plot's left edge), "gantt-axis" (makespan
// label and top tick labels: they stay at the top when scrolling down) and "gantt-fixed" (the
// header and the label column: they stay at the left). Without the script they are just drawn.

// The <script> element: pan (drag, wheel, Shift+wheel, arrow keys), time zoom (Ctrl+wheel, + and
// -, 0, f, and buttons), sticky layers, and an initial view from the URL's fragment
// (#t=1200&gpu=16&zoom=2, zoom=fit). Self-contained: no external resources.
std::string script_element(const Chart& c);

// ---- Header (gantt_svg_header.cc) ---------------------------------------------------------------

// Title, custom title, the instance line, the infeasibility reason; returns the y below them.
double write_header(std::string& out, const Chart& c, double y);
// The legend's swatches, wrapped to the picture's width; returns the y below it.
double write_legend(std::string& out, const Chart& c, double y);

// ---- Time axis (gantt_svg_axis.cc) ------------------------------------------------------------------

void write_tick_labels(std::string& out, const Chart& c, double baseline);
void write_grid(std::string& out, const Chart& c);
void write_makespan_line(std::string& out, const Chart& c);
void write_makespan_label(std::string& out, const Chart& c, double baseline);

// ---- Device rows (gantt_svg_rows.cc) -------------------------------------------------------------

void write_backgrounds(std::string& out, const Chart& c, int d);
void write_row_labels(std::string& out, const Chart& c, int d);
// Fills c.ops from the simulation's timeline.
void collect_ops(Chart& c);
void write_ops(std::string& out, const Chart& c, int d);
void write_transfers(std::string& out, const Chart& c, int d);
inline constexpr double kMaxTransferFont = 9;
void write_transfer_labels(std::string& out, const Chart& c, int d);

// ---- Microbatch labels (gantt_svg_labels.cc) ------------------------------------------------------
// The rule, the same for F, B and W: an op whose box has room for its microbatch number gets it
// inside (kMaxBoxFont down to kMinBoxFont px); of the others, those whose microbatch is a
// multiple of N get it in the label lane above the row, centred on the box, with a tick down to
// it (moved inwards at the plot's ends). N is the smallest of 1, 2, 5, 10, 20, 50, ... for which
// at most a tenth of those labels would collide with the one before them on their row (they are
// left out; a label next to one with its own number, as B and W of a microbatch often are, is
// left out without counting), so that a reader finds microbatch numbers everywhere. The chart's script applies the same rule when it zooms (gantt_svg_script.cc).

inline constexpr double kMaxBoxFont = 11, kMinBoxFont = 8, kLaneFont = 9;
inline constexpr double kBoxPad = 2;     // px left free on each side of an in-box label
inline constexpr double kLaneGapPx = 3;  // px between two labels in a lane
inline constexpr double kLaneBaselineAboveBox = 4.5;  // a lane label's baseline, px above its op's box
inline constexpr double kLaneDarken = 0.25;           // lane labels: the op type's colour, darker
inline constexpr double kMaxLaneCollisions = 0.1;     // share of lane labels N may leave out

// The font of a label of `chars` glyphs centred in a box w × h: the largest up to `max_font`
// that leaves kBoxPad on each side and fits the height, or 0 when that is below kMinBoxFont.
double in_box_font(double w, double h, std::size_t chars, double max_font);
// The baseline that centres a line of digits of `font` px on a box from y to y + h.
double centred_baseline(double y, double h, double font);

// Fills c.labels and c.label_every from c.ops and c.rows.
void plan_labels(Chart& c);
// The labels of device d's ops, and the ticks from the lane labels down to their boxes.
void write_op_labels(std::string& out, const Chart& c, int d);

// ---- Idle summary (gantt_svg_summary.cc) ----------------------------------------------------------
// A band under the legend: each GPU's idle share of the makespan as a bar (its bubble), stacked
// from idle before its first op, between its ops and after its last op (the times in its
// tooltip); the overall bubble as a dashed line across them. Nothing for an infeasible run,
// which has no makespan.

inline constexpr double kSummaryBand = 58;
inline constexpr double kMinSummaryColumn = 26, kMaxSummaryColumn = 48;

// Width of one GPU's column in the band.
double summary_column(const Chart& c);
// The band from `y` down; returns the y below it (y itself when there is no band).
double write_summary(std::string& out, const Chart& c, double y);
// "idle 28.2%" for device d's row label ("" when infeasible), and its tooltip.
std::string idle_label(const Chart& c, int d);
std::string idle_tooltip(const Chart& c, int d);

// ---- Memory (gantt_svg_memory.cc) -----------------------------------------------------------------

// The curve, the limit and static memory lines (time-scaled); the caption above the chart; the
// scale labels left of it (in the label column).
void write_memory(std::string& out, const Chart& c, int d);
void write_memory_caption(std::string& out, const Chart& c, int d);
void write_memory_scale(std::string& out, const Chart& c, int d);

}  // namespace optpipe::gantt
