// The SVG Gantt chart's parts, for viz/gantt_svg.cc, which puts them together (one concept per
// file): the chart's geometry (gantt_svg_layout.cc), the header and legend
// (gantt_svg_header.cc), the time axis (gantt_svg_axis.cc), the device rows
// (gantt_svg_rows.cc) and the memory charts (gantt_svg_memory.cc). Internal to viz/.
#pragma once

#include <string>
#include <vector>

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
inline constexpr double kDeviceGap = 14;
inline constexpr double kAxisLabels = 16;    // tick labels band
inline constexpr double kMakespanBand = 14;  // makespan label band above the tick labels

struct TimeAxis {
  double left = 0, right = 0, end = 1, step = 1;
  int tick_decimals = 0, time_decimals = 2;
  double x(double t) const { return left + (right - left) * t / end; }
  std::string time(double t) const { return svg::fixed(t, time_decimals); }
};

// Top edges (px) of one device's bands; -1 for a band it does not have.
struct DeviceRows {
  double top = 0, op = 0, d2h = -1, h2d = -1, caption = -1, chart = -1, bottom = 0;
};

struct Chart {
  const Instance& inst;
  const Schedule& sch;
  const SimResult& sim;
  const SvgGanttOptions& opt;
  std::vector<std::vector<int>> stages;  // stages_by_device()
  bool multi_stage = false;
  TimeAxis axis;
  std::vector<DeviceRows> rows;
  double width = 0, height = 0;
  double plot_top = 0, plot_bottom = 0;  // grid lines span
};

Chart make_chart(const Instance& inst, const Schedule& sch, const SimResult& sim, const SvgGanttOptions& opt);
// Lays out device `d` from `y` down; returns where the next device starts.
double layout_device(Chart& c, int d, double y);
bool has_transfer(const SimResult& sim, int d, Transfer::Kind kind);
std::string gpu(int d);  // "GPU 3"

// ---- Header (gantt_svg_header.cc) ---------------------------------------------------------------

// Title, custom title, the instance line, the infeasibility reason; returns the y below them.
double write_header(std::string& out, const Chart& c, double y);
// The legend's swatches, wrapped to the picture's width; returns the y below it.
double write_legend(std::string& out, const Chart& c, double y);

// ---- Time axis (gantt_svg_axis.cc) ------------------------------------------------------------------

void write_tick_labels(std::string& out, const Chart& c, double baseline);
void write_grid(std::string& out, const Chart& c);
void write_makespan(std::string& out, const Chart& c, double label_baseline);

// ---- Device rows (gantt_svg_rows.cc) -------------------------------------------------------------

void write_backgrounds(std::string& out, const Chart& c, int d);
void write_row_labels(std::string& out, const Chart& c, int d);
void write_ops(std::string& out, const Chart& c, int d);
void write_transfers(std::string& out, const Chart& c, int d);

// ---- Memory (gantt_svg_memory.cc) -----------------------------------------------------------------

void write_memory(std::string& out, const Chart& c, int d);

}  // namespace optpipe::gantt
