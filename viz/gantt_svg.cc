// The SVG Gantt chart (gantt_svg.h): puts the parts of gantt_svg_parts.h together, top to bottom
// and back to front.
#include "viz/gantt_svg.h"

#include <algorithm>
#include <cmath>

#include "viz/gantt_svg_parts.h"

namespace optpipe {

double nice_tick_step(double span, int max_ticks) {
  if (!(span > 0) || !std::isfinite(span)) return 1.0;
  const double raw = span / std::max(1, max_ticks);
  double step = std::pow(10.0, std::floor(std::log10(raw)));
  for (double f : {1.0, 2.0, 5.0, 10.0}) {
    if (f * step >= raw * (1 - 1e-12)) return f * step;
  }
  return 10 * step;
}

std::string render_svg_gantt(const Instance& instance, const Schedule& schedule, const SimResult& sim,
                             const SvgGanttOptions& options) {
  using namespace gantt;
  using namespace svg;
  Chart c = make_chart(instance, schedule, sim, options);
  std::string body;
  double y = write_header(body, c, kMargin - 4);
  y = write_legend(body, c, y);
  y = write_summary(body, c, y);
  const double makespan_baseline = y + 10, top_ticks = y + kMakespanBand + 10;
  c.plot_top = y + kMakespanBand + kAxisLabels - 2;
  y = c.plot_top + 4;
  for (int d = 0; d < instance.num_devices(); ++d) y = layout_device(c, d, y);
  c.plot_bottom = y - kDeviceGap + 4;
  const double bottom_ticks = c.plot_bottom + 12;
  collect_ops(c);
  plan_labels(c);
  c.height = bottom_ticks + kMargin;

  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + px(c.width) + "\" height=\"" +
         px(c.height) + "\" viewBox=\"0 0 " + px(c.width) + " " + px(c.height) +
         "\" font-family=\"sans-serif\">\n";
  out += "<title>" +
         escape("Gantt chart of " + (instance.name.empty() ? std::string("a schedule") : instance.name)) +
         "</title>\n";
  rect(out, 0, 0, c.width, c.height, "fill=\"#FFFFFF\"");
  out += body;
  for (int d = 0; d < instance.num_devices(); ++d) write_backgrounds(out, c, d);
  write_grid(out, c);
  write_tick_labels(out, c, top_ticks);
  write_tick_labels(out, c, bottom_ticks);
  for (int d = 0; d < instance.num_devices(); ++d) {
    write_row_labels(out, c, d);
    write_ops(out, c, d);
    write_op_labels(out, c, d);
    write_transfers(out, c, d);
    write_memory(out, c, d);
  }
  write_makespan(out, c, makespan_baseline);
  out += "</svg>\n";
  return out;
}

}  // namespace optpipe
