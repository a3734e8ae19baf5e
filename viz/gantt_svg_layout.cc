// The SVG Gantt chart's geometry (gantt_svg_parts.h): the time axis, the picture's width, and
// the bands of every device row.
#include <algorithm>
#include <cmath>

#include "viz/gantt_svg_parts.h"

namespace optpipe::gantt {
namespace {

double axis_end(const SimResult& sim) {
  double end = sim.makespan;
  for (const Transfer& t : sim.transfers) end = std::max(end, t.started ? t.end : t.request);
  for (const auto& curve : sim.memory) {
    if (!curve.empty()) end = std::max(end, curve.back().time);
  }
  return end > 0 && std::isfinite(end) ? end : 1.0;
}

TimeAxis make_axis(double left, double right, double end) {
  TimeAxis a;
  a.left = left;
  a.right = right;
  a.end = end;
  a.step = nice_tick_step(end, std::max(2, static_cast<int>((right - left) / 90)));
  a.tick_decimals = std::max(0, -static_cast<int>(std::floor(std::log10(a.step) + 1e-9)));
  a.time_decimals = std::max(2, a.tick_decimals + 1);
  return a;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

}  // namespace

double auto_width(const Instance& inst, const Schedule& sch, const SimResult& sim) {
  std::vector<double> durations;
  for (std::size_t d = 0; d < sim.timeline.size() && d < sch.devices.size(); ++d) {
    for (std::size_t k = 0; k < sim.timeline[d].size() && k < sch.devices[d].size(); ++k) {
      const ActionTiming& t = sim.timeline[d][k];
      if (sch.devices[d][k].is_compute() && t.done() && t.end > t.start) durations.push_back(t.end - t.start);
    }
  }
  const double typical = median(durations);
  const double fixed_px = kMargin + kLabelColumn + kMargin + 10;
  if (!(typical > 0)) return kMinAutoWidth;
  const auto chars = std::to_string(std::max(0, inst.microbatches - 1)).size();
  const double need = svg::text_width(chars, kAutoLabelFont) + 2 * kBoxPad;
  const double width = fixed_px + need / typical * axis_end(sim);
  // Room for the summary band's columns too.
  const double band = kMargin + kLabelColumn + inst.num_devices() * kMinSummaryColumn + 130 + kMargin;
  return std::clamp(std::ceil(std::max(width, band)), static_cast<double>(kMinAutoWidth),
                    static_cast<double>(kMaxAutoWidth));
}

std::string gpu(int d) { return "GPU " + std::to_string(d); }

bool has_transfer(const SimResult& sim, int d, Transfer::Kind kind) {
  return std::any_of(sim.transfers.begin(), sim.transfers.end(),
                     [&](const Transfer& t) { return t.device == d && t.kind == kind; });
}

namespace {

double layout_device(Chart& c, int d, double y) {
  DeviceRows r;
  r.top = y;
  r.lane = y;
  r.op = y + kLabelLane;
  y = r.op + kOpRow;
  if (c.opt.transfers && has_transfer(c.sim, d, Transfer::Kind::kOffload)) {
    r.d2h = y + kLaneGap;
    y = r.d2h + kLane;
  }
  if (c.opt.transfers && has_transfer(c.sim, d, Transfer::Kind::kReload)) {
    r.h2d = y + kLaneGap;
    y = r.h2d + kLane;
  }
  if (c.opt.memory) {
    r.caption = y + 3;
    r.chart = r.caption + kMemCaption;
    y = r.chart + kMemChart;
  }
  r.bottom = y;
  c.rows.push_back(r);
  return y + kDeviceGap;
}

}  // namespace

void layout_plot(Chart& c, double y) {
  c.axis_top = y;
  c.makespan_baseline = y + 10;
  c.top_ticks = y + kMakespanBand + 10;
  c.plot_top = y + kMakespanBand + kAxisLabels - 2;
  y = c.plot_top + 4;
  c.rows.clear();
  for (int d = 0; d < c.inst.num_devices(); ++d) y = layout_device(c, d, y);
  c.plot_bottom = y - kDeviceGap + 4;
  c.bottom_ticks = c.plot_bottom + 12;
  c.height = c.bottom_ticks + kMargin;
}

Chart make_chart(const Instance& inst, const Schedule& sch, const SimResult& sim, const SvgGanttOptions& opt) {
  Chart c{inst, sch, sim, opt, inst.stages_by_device()};
  for (const auto& s : c.stages) c.multi_stage = c.multi_stage || s.size() > 1;
  c.width = opt.width > 0 ? std::max(opt.width, 320) : auto_width(inst, sch, sim);
  c.header_right = std::min(c.width, kHeaderWidth) - kMargin;
  c.axis = make_axis(kMargin + kLabelColumn, c.width - kMargin - 10, axis_end(sim));
  return c;
}

}  // namespace optpipe::gantt
