// The SVG Gantt chart's memory charts (gantt_svg_parts.h): each device's memory in use over time
// against its limit and static memory, with its scale and caption.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <functional>

#include "model/bytes.h"
#include "viz/gantt_svg_parts.h"

namespace optpipe::gantt {

using namespace svg;

namespace {

struct MemoryScale {
  double top = 1, bottom = 0, peak = 0, limit = 0, statics = 0;
  bool limit_off_scale = false;
};

MemoryScale memory_scale(const Chart& c, int d) {
  MemoryScale m;
  m.limit = c.inst.devices[d].memory_limit;
  m.statics = c.inst.devices[d].static_memory;
  if (d < static_cast<int>(c.sim.peak_memory.size())) m.peak = c.sim.peak_memory[d];
  if (d < static_cast<int>(c.sim.memory.size())) {
    for (const MemoryPoint& p : c.sim.memory[d]) m.peak = std::max(m.peak, p.bytes);
  }
  // The scale starts a little below static memory: what changes over time is the activations
  // above it, and that is what should fill the chart.
  const double base = std::max(m.peak, m.statics);
  const double above = base - m.statics;
  m.limit_off_scale = !std::isfinite(m.limit) || (above > 0 && m.limit - m.statics > 20 * above) ||
                      (above <= 0 && base > 0 && m.limit > 20 * base);
  const double high = m.limit_off_scale ? base : std::max(m.limit, base);
  m.bottom = std::max(0.0, m.statics - 0.1 * (high - m.statics));
  m.top = high + 0.05 * (high - m.bottom);
  if (!(m.top > m.bottom)) {
    m.bottom = 0;
    m.top = high > 0 ? 1.05 * high : 1;
  }
  return m;
}

// The step curve as a closed path from the axis end back along the baseline.
std::string memory_path(const Chart& c, const std::vector<MemoryPoint>& curve, double static_bytes,
                        const std::function<double(double)>& y_of) {
  std::vector<MemoryPoint> pts = curve;
  if (pts.empty() || pts.front().time > 0) pts.insert(pts.begin(), MemoryPoint{0.0, static_bytes});
  const double base = y_of(0);
  std::string d = "M" + px(c.axis.x(pts.front().time)) + "," + px(base);
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const double t_next = i + 1 < pts.size() ? pts[i + 1].time : c.axis.end;
    const double y = y_of(pts[i].bytes);
    d += " L" + px(c.axis.x(pts[i].time)) + "," + px(y) + " L" + px(c.axis.x(std::max(t_next, pts[i].time))) +
         "," + px(y);
  }
  d += " L" + px(c.axis.x(c.axis.end)) + "," + px(base) + " Z";
  return d;
}

}  // namespace

void write_memory(std::string& out, const Chart& c, int d) {
  const DeviceRows& r = c.rows[d];
  if (r.chart < 0) return;
  const MemoryScale m = memory_scale(c, d);
  const double left = c.axis.left, right = c.axis.right, bottom = r.chart + kMemChart;
  const std::function<double(double)> y_of = [&](double bytes) {
    return bottom - kMemChart * std::clamp((bytes - m.bottom) / (m.top - m.bottom), 0.0, 1.0);
  };
  if (d < static_cast<int>(c.sim.memory.size()) && !c.sim.memory[d].empty()) {
    // The stroke keeps its width when the script stretches the path along the time axis.
    out += "<path class=\"memory\" d=\"" + memory_path(c, c.sim.memory[d], m.statics, y_of) + "\" fill=\"" +
           kMemoryFill + "\" stroke=\"" + kMemoryStroke +
           "\" stroke-width=\"1\" stroke-linejoin=\"round\" vector-effect=\"non-scaling-stroke\"/>\n";
    // The first moment of the peak.
    for (const MemoryPoint& p : c.sim.memory[d]) {
      if (p.bytes < m.peak - kMemoryTolerance) continue;
      out += "<circle cx=\"" + px(c.axis.x(p.time)) + "\" cy=\"" + px(y_of(p.bytes)) +
             "\" r=\"2.5\" fill=\"" + std::string(kMemoryStroke) + "\"><title>" +
             escape("peak " + format_bytes(m.peak) + " at " + c.axis.time(p.time) + " ms") +
             "</title></circle>\n";
      break;
    }
  }
  if (m.statics > 0) {
    line(out, left, y_of(m.statics), right, y_of(m.statics),
         "class=\"static\" stroke=\"#999999\" stroke-width=\"1\" stroke-dasharray=\"1 2\"",
         "static memory " + format_bytes(m.statics));
  }
  const double y_limit = m.limit_off_scale ? r.chart : y_of(m.limit);
  line(out, left, y_limit, right, y_limit,
       std::string("class=\"limit\" stroke=\"") + kLimitColour +
           "\" stroke-width=\"1.5\" stroke-dasharray=\"6 3\"",
       "memory limit " + format_bytes(m.limit) +
           (m.limit_off_scale ? " (far above the peak: off scale)" : ""));
}

void write_memory_caption(std::string& out, const Chart& c, int d) {
  const DeviceRows& r = c.rows[d];
  if (r.chart < 0) return;
  const MemoryScale m = memory_scale(c, d);
  const bool has_curve = d < static_cast<int>(c.sim.memory.size()) && !c.sim.memory[d].empty();
  std::string caption = "memory: peak " +
                        (has_curve || m.peak > 0 ? format_bytes(m.peak) : std::string("n/a")) + " / limit " +
                        format_bytes(m.limit) + (m.limit_off_scale ? " (off scale)" : "");
  if (m.statics > 0) caption += " \u00b7 static " + format_bytes(m.statics);
  if (m.peak > m.limit + kMemoryTolerance) caption += " \u00b7 OVER THE LIMIT";
  text(out, c.axis.left + 2, r.caption + 10, escape(caption), "class=\"peak\" font-size=\"10\" fill=\"#333333\"");
}

void write_memory_scale(std::string& out, const Chart& c, int d) {
  const DeviceRows& r = c.rows[d];
  if (r.chart < 0) return;
  const MemoryScale m = memory_scale(c, d);
  const double x = c.axis.left - 8, bottom = r.chart + kMemChart;
  text(out, x, r.chart + 8, escape(format_bytes(m.top)), "font-size=\"8.5\" fill=\"#666666\" text-anchor=\"end\"");
  text(out, x, bottom, escape(m.bottom > 0 ? format_bytes(m.bottom) : std::string("0")),
       "font-size=\"8.5\" fill=\"#666666\" text-anchor=\"end\"");
  text(out, x, r.chart + kMemChart / 2 + 3, "memory", "font-size=\"9\" fill=\"#666666\" text-anchor=\"end\"");
}

}  // namespace optpipe::gantt
