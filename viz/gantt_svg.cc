// The SVG Gantt chart (gantt_svg.h): puts the parts of gantt_svg_parts.h together, in the layers
// that the chart's script pans and zooms (back to front: plot, memory captions, axis, header and
// label column), then the script.
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

namespace gantt {
namespace {

using namespace svg;

std::string open_svg(const Chart& c) {
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + px(c.width) + "\" height=\"" +
         px(c.height) + "\" viewBox=\"0 0 " + px(c.width) + " " + px(c.height) + "\" font-family=\"sans-serif\">\n";
  out += "<title>" +
         escape("Gantt chart of " + (c.inst.name.empty() ? std::string("a schedule") : c.inst.name)) +
         "</title>\n";
  rect(out, 0, 0, c.width, c.height, "id=\"gantt-background\" fill=\"#FFFFFF\"");
  return out;
}

// The plot: everything placed in time, with the labels that the script makes again on zoom.
void write_scroll_layer(std::string& out, const Chart& c) {
  const int n = c.inst.num_devices();
  out += "<g id=\"gantt-scroll\">\n<g class=\"tx\">\n";
  for (int d = 0; d < n; ++d) write_backgrounds(out, c, d);
  out += "</g>\n<g id=\"gantt-grid\">\n";
  write_grid(out, c);
  out += "</g>\n<g class=\"tx\">\n";
  for (int d = 0; d < n; ++d) {
    write_ops(out, c, d);
    write_transfers(out, c, d);
    write_memory(out, c, d);
  }
  write_makespan_line(out, c);
  out += "</g>\n<g id=\"gantt-labels\">\n";
  for (int d = 0; d < n; ++d) write_op_labels(out, c, d);
  for (int d = 0; d < n; ++d) write_transfer_labels(out, c, d);
  out += "</g>\n<g class=\"ticks\" data-baseline=\"" + px(c.bottom_ticks) + "\">\n";
  write_tick_labels(out, c, c.bottom_ticks);
  out += "</g>\n</g>\n";
}

// The makespan label and the top tick labels on an opaque strip, which the script keeps at the
// top of the window.
void write_axis_layer(std::string& out, const Chart& c) {
  out += "<g id=\"gantt-axis\">\n";
  rect(out, c.axis.left - 1, c.axis_top, c.width - c.axis.left + 1, c.plot_top - 2 - c.axis_top,
       "id=\"gantt-axis-strip\" fill=\"#FFFFFF\"");
  out += "<g class=\"tx\">\n";
  write_makespan_label(out, c, c.makespan_baseline);
  out += "</g>\n<g class=\"ticks\" data-baseline=\"" + px(c.top_ticks) + "\">\n";
  write_tick_labels(out, c, c.top_ticks);
  out += "</g>\n</g>\n";
}

// The header and, on an opaque column, the row labels and memory scales.
void write_fixed_layer(std::string& out, const Chart& c, const std::string& header) {
  out += "<g id=\"gantt-fixed\">\n";
  out += header;
  rect(out, 0, c.axis_top, c.axis.left - 1, c.height - c.axis_top, "id=\"gantt-column\" fill=\"#FFFFFF\"");
  for (int d = 0; d < c.inst.num_devices(); ++d) {
    write_row_labels(out, c, d);
    write_memory_scale(out, c, d);
  }
  out += "</g>\n";
}

}  // namespace
}  // namespace gantt

std::string render_svg_gantt(const Instance& instance, const Schedule& schedule, const SimResult& sim,
                             const SvgGanttOptions& options) {
  using namespace gantt;
  Chart c = make_chart(instance, schedule, sim, options);
  std::string header;
  double y = write_header(header, c, kMargin - 4);
  y = write_legend(header, c, y);
  y = write_summary(header, c, y);
  layout_plot(c, y);
  collect_ops(c);
  plan_labels(c);

  std::string out = open_svg(c);
  write_scroll_layer(out, c);
  out += "<g id=\"gantt-captions\">\n";
  for (int d = 0; d < instance.num_devices(); ++d) write_memory_caption(out, c, d);
  out += "</g>\n";
  write_axis_layer(out, c);
  write_fixed_layer(out, c, header);
  if (options.script) out += script_element(c);
  out += "</svg>\n";
  return out;
}

}  // namespace optpipe
