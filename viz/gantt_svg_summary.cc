// The SVG Gantt chart's idle summary (gantt_svg_parts.h): a band of per-GPU idle bars under the
// legend (idle before the GPU's first op, between its ops, after its last op), with the overall
// bubble, and the idle share in each GPU's row label.
#include <algorithm>
#include <cmath>
#include <string>

#include "viz/gantt_svg_parts.h"

namespace optpipe::gantt {

using namespace svg;

namespace {

constexpr double kBarHeight = 24;
constexpr const char* kBusyFill = "#ECEEF1";
constexpr double kKeyWidth = 118;  // the key of the three shades, right of the bars

// A GPU's idle time in three parts: before its first op, between its ops, after its last op.
struct Idle {
  double before = 0, between = 0, after = 0;
  double total() const { return before + between + after; }
};

struct IdlePart {
  const char* name;
  const char* fill;
};
// Bottom to top in a bar.
constexpr IdlePart kParts[] = {{"before its first op", "#5B6677"}, {"between its ops", "#8C96A3"},
                               {"after its last op", "#BCC3CC"}};

bool has_summary(const Chart& c) {
  return c.sim.feasible && c.sim.makespan > 0 && c.inst.num_devices() > 0 &&
         static_cast<int>(c.sim.busy.size()) >= c.inst.num_devices();
}

double idle_time(const Chart& c, int d) { return std::max(0.0, c.sim.makespan - c.sim.busy[d]); }
double idle_share(const Chart& c, int d) { return idle_time(c, d) / c.sim.makespan; }

Idle idle_parts(const Chart& c, int d) {
  double first = c.sim.makespan, last = 0;
  if (d < static_cast<int>(c.sim.timeline.size()) && d < static_cast<int>(c.sch.devices.size())) {
    for (std::size_t k = 0; k < c.sim.timeline[d].size() && k < c.sch.devices[d].size(); ++k) {
      const ActionTiming& t = c.sim.timeline[d][k];
      if (!c.sch.devices[d][k].is_compute() || !t.done()) continue;
      first = std::min(first, t.start);
      last = std::max(last, t.end);
    }
  }
  Idle i;
  i.before = first;
  i.after = std::max(0.0, c.sim.makespan - std::max(last, first));
  i.between = std::max(0.0, idle_time(c, d) - i.before - i.after);
  return i;
}

// The key of the shades, right of the bars.
void write_summary_key(std::string& out, double x, double y) {
  for (int k = 2; k >= 0; --k) {
    const double row = y + 15 + (2 - k) * 9;
    rect(out, x, row, 8, 7, std::string("fill=\"") + kParts[k].fill + "\"");
    text(out, x + 11, row + 7, kParts[k].name, "font-size=\"8.5\" fill=\"#555555\"");
  }
}

// The left column: what the band shows, and the overall bubble.
void write_summary_caption(std::string& out, const Chart& c, double y) {
  const double x = c.axis.left - 8;
  text(out, x, y + 12, "idle per GPU", "font-size=\"10\" font-weight=\"bold\" fill=\"#1A1A1A\" text-anchor=\"end\"");
  text(out, x, y + 25, "(its bubble)", "font-size=\"9\" fill=\"#666666\" text-anchor=\"end\"");
  text(out, x, y + 40, escape("all: " + fixed(c.sim.bubble * 100, 1) + "%"),
       "class=\"bubble\" font-size=\"10\" fill=\"#1A1A1A\" text-anchor=\"end\"");
  text(out, x, y + kSummaryBand - 8, "GPU", "font-size=\"9\" fill=\"#666666\" text-anchor=\"end\"");
}

}  // namespace

double summary_column(const Chart& c) {
  const int n = std::max(1, c.inst.num_devices());
  const double room = (c.header_right - c.axis.left - kKeyWidth) / n;
  return std::clamp(std::floor(room), kMinSummaryColumn, kMaxSummaryColumn);
}

std::string idle_label(const Chart& c, int d) {
  return has_summary(c) ? "idle " + fixed(idle_share(c, d) * 100, 1) + "%" : std::string();
}

std::string idle_tooltip(const Chart& c, int d) {
  if (!has_summary(c)) return {};
  const Idle i = idle_parts(c, d);
  return gpu(d) + ": busy " + c.axis.time(c.sim.busy[d]) + " ms, idle " + c.axis.time(idle_time(c, d)) + " ms = " +
         fixed(idle_share(c, d) * 100, 1) + "% of the makespan " + c.axis.time(c.sim.makespan) + " ms: " +
         c.axis.time(i.before) + " ms before its first op, " + c.axis.time(i.between) + " ms between its ops, " +
         c.axis.time(i.after) + " ms after its last op";
}

double write_summary(std::string& out, const Chart& c, double y) {
  if (!has_summary(c)) return y;
  write_summary_caption(out, c, y);
  const double cw = summary_column(c), bar_w = cw - 8, bar_top = y + 15, bar_bottom = bar_top + kBarHeight;
  for (int d = 0; d < c.inst.num_devices(); ++d) {
    const double x = c.axis.left + d * cw, mid = x + cw / 2, share = idle_share(c, d);
    text(out, mid, y + 11, escape(fixed(share * 100, 0) + "%"),
         "class=\"idle\" font-size=\"9\" fill=\"#333333\" text-anchor=\"middle\"");
    const std::string tip = idle_tooltip(c, d);
    rect(out, x + 4, bar_top, bar_w, kBarHeight, std::string("fill=\"") + kBusyFill + "\"", tip);
    const Idle i = idle_parts(c, d);
    const double parts[] = {i.before, i.between, i.after};
    double bottom = bar_bottom;
    for (int k = 0; k < 3; ++k) {
      const double h = parts[k] / c.sim.makespan * kBarHeight;
      rect(out, x + 4, bottom - h, bar_w, h, std::string("class=\"idle-bar\" fill=\"") + kParts[k].fill + "\"", tip);
      bottom -= h;
    }
    text(out, mid, y + kSummaryBand - 8, std::to_string(d), "font-size=\"9\" fill=\"#666666\" text-anchor=\"middle\"");
  }
  write_summary_key(out, c.axis.left + c.inst.num_devices() * cw + 8, y);
  const double level = bar_bottom - c.sim.bubble * kBarHeight;
  line(out, c.axis.left, level, c.axis.left + c.inst.num_devices() * cw, level,
       "class=\"bubble-line\" stroke=\"#1A1A1A\" stroke-width=\"1\" stroke-dasharray=\"4 2\"",
       "bubble " + fixed(c.sim.bubble * 100, 1) + "%: the idle share of all GPUs together");
  return y + kSummaryBand;
}

}  // namespace optpipe::gantt
