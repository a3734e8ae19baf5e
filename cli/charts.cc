#include "cli/charts.h"

#include <algorithm>
#include <cstdlib>

#include "model/instance_io.h"
#include "viz/gantt_text.h"

namespace optpipe::cli {

int terminal_width() {
  if (const char* cols = std::getenv("COLUMNS")) {
    const int c = std::atoi(cols);
    if (c > 40) return c;
  }
  return 120;
}

void print_gantt(std::ostream& out, const Instance& inst, const Schedule& sch, const SimResult& sim, int width) {
  TextGanttOptions o;
  o.width = std::max(20, width - 8);
  o.ruler = true;
  out << "\n" << render_text_gantt(inst, sch, sim, o)
      << "  (F forward, B backward, W weight, then the microbatch number where it fits (F11: forward of "
      << "microbatch 11); > offload, < reload; f, b, w: a device's later stage)\n";
}

void write_svg(std::ostream& out, const Instance& inst, const Schedule& sch, const SimResult& sim,
               const std::string& path, const SvgGanttOptions& o) {
  write_text_file(path, render_svg_gantt(inst, sch, sim, o));
  if (path != "-") out << "wrote " << path << "\n";
}

}  // namespace optpipe::cli
