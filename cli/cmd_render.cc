#include "cli/cmd_render.h"

#include <iostream>

#include "cli/charts.h"
#include "cli/exit_codes.h"
#include "cli/inputs.h"
#include "cli/validators.h"
#include "model/simulator.h"
#include "viz/gantt_svg.h"

namespace optpipe::cli {

CLI::App* add_render_command(CLI::App& app, RenderArgs& args) {
  auto* cmd = app.add_subcommand("render", "Draw an SVG Gantt chart of a schedule (ops, transfers, memory)");
  cmd->add_option("INSTANCE", args.instance, "instance file")->required();
  cmd->add_option("SCHEDULE", args.schedule, "schedule file")->required();
  cmd->add_option("-o,--output", args.output, "SVG file to write")->required();
  cmd->add_option("--width", args.width, "picture width in px (default: wide enough for the ops' microbatch numbers, 1400 to 20000)")->check(from_to(300, 20000));
  cmd->add_option("--title", args.title, "title line (default: instance, makespan, bubble)");
  cmd->add_flag("--no-memory", args.no_memory, "leave out the memory charts");
  cmd->add_flag("--no-transfers", args.no_transfers, "leave out the offload/reload lanes");
  cmd->add_flag("--no-script", args.no_script,
                "leave out the inline script (pan, time zoom and labels that stay in view, in a browser)");
  return cmd;
}

int run_render(const RenderArgs& a) {
  auto pair = load_pair(a.instance, a.schedule);
  if (!pair) return kNegative;
  const auto& [inst, sch] = *pair;
  const SimResult sim = simulate(inst, sch);
  SvgGanttOptions o;
  o.width = a.width;
  o.memory = !a.no_memory;
  o.transfers = !a.no_transfers;
  o.title = a.title;
  o.script = !a.no_script;
  write_svg(std::cout, inst, sch, sim, a.output, o);
  if (!sim.feasible) std::cout << "note: the schedule is infeasible; the chart shows what ran: " << sim.reason << "\n";
  return sim.feasible ? kOk : kNegative;
}

}  // namespace optpipe::cli
