// The SVG Gantt chart's time axis (gantt_svg_parts.h): tick labels, grid lines, the makespan line.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "viz/gantt_svg_parts.h"

namespace optpipe::gantt {

using namespace svg;

namespace {

std::string makespan_text(const Chart& c) {
  return (c.sim.feasible ? "makespan " : "stopped at ") + c.axis.time(c.sim.makespan) + " ms";
}

}  // namespace

void write_tick_labels(std::string& out, const Chart& c, double baseline) {
  const TimeAxis& a = c.axis;
  const auto n = static_cast<int>(std::floor(a.end / a.step + 1e-9));
  for (int i = 0; i <= n; ++i) {
    const double t = i * a.step;
    const std::string label = fixed(t, a.tick_decimals) + (i == 0 ? " ms" : "");
    const char* anchor = i == 0 ? "start" : "middle";
    text(out, a.x(t), baseline, escape(label),
         std::string("class=\"tick\" font-size=\"10\" fill=\"#555555\" text-anchor=\"") + anchor + "\"");
  }
}

void write_grid(std::string& out, const Chart& c) {
  const TimeAxis& a = c.axis;
  const auto n = static_cast<int>(std::floor(a.end / a.step + 1e-9));
  for (int i = 0; i <= n; ++i) {
    const double x = a.x(i * a.step);
    line(out, x, c.plot_top, x, c.plot_bottom, std::string("stroke=\"") + kGrid + "\" stroke-width=\"1\"");
  }
}

void write_makespan_line(std::string& out, const Chart& c) {
  const double x = c.axis.x(c.sim.makespan);
  line(out, x, c.plot_top - 2, x, c.plot_bottom,
       "class=\"makespan\" stroke=\"#1A1A1A\" stroke-width=\"1.2\" stroke-dasharray=\"5 3\"", makespan_text(c));
}

void write_makespan_label(std::string& out, const Chart& c, double baseline) {
  const double x = c.axis.x(c.sim.makespan);
  const std::string label = makespan_text(c);
  const bool room_left = x - text_width(glyphs(label), 10) - 4 >= c.axis.left;
  // data-x0: where the line is, for the script that moves the label with it.
  text(out, room_left ? x - 3 : x + 3, baseline, escape(label),
       "class=\"makespan-label\" data-x0=\"" + px(x) +
           "\" font-size=\"10\" font-weight=\"bold\" fill=\"#1A1A1A\" text-anchor=\"" + (room_left ? "end" : "start") +
           "\"");
}

}  // namespace optpipe::gantt
