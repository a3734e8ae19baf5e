#include "cli/cmd_simulate.h"

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <iostream>
#include <string>

#include "cli/charts.h"
#include "cli/exit_codes.h"
#include "cli/inputs.h"
#include "cli/json_output.h"
#include "cli/report.h"
#include "model/bytes.h"
#include "model/simulator.h"
#include "model/validation_json.h"
#include "model/validator.h"
#include "viz/bottleneck.h"

namespace optpipe::cli {
namespace {

// With --timeline: every action's start and end, then every transfer's request, start and end.
void print_timeline(const Instance& inst, const Schedule& sch, const SimResult& sim) {
  std::cout << "\ndevice  position  action      start (ms)    end (ms)\n";
  char line[256];
  for (int d = 0; d < inst.num_devices(); ++d) {
    for (std::size_t k = 0; k < sch.devices[d].size(); ++k) {
      const ActionTiming& t = sim.timeline[d][k];
      std::snprintf(line, sizeof line, "%6d  %8zu  %-10s  %10.4f  %10.4f%s\n", d, k, to_string(sch.devices[d][k]).c_str(),
                    t.start, t.end, sch.devices[d][k].type == OpType::R ? "  (reload requested)" : "");
      std::cout << (t.done() ? line : std::string(line).substr(0, 28) + "  did not run\n");
    }
  }
  if (sim.transfers.empty()) return;
  std::cout << "\ntransfer  device  group  of     bytes        request     start       end\n";
  for (const Transfer& t : sim.transfers) {
    std::snprintf(line, sizeof line, "%-8s  %6d  %5d  %d.%-3d  %-11s  %10.4f  %10.4f  %10.4f\n",
                  t.kind == Transfer::Kind::kOffload ? "offload" : "reload", t.device, t.group, t.stage, t.mb,
                  format_bytes(t.bytes).c_str(), t.request, t.start, t.end);
    std::cout << line;
  }
}

// --format json: the check and simulation of the schedule, as validate gives it (the
// structure's violations, a deadlock), with the timeline under --timeline.
int simulate_json(const SimulateArgs& a) {
  const auto [inst, sch] = load_both(a.instance, a.schedule);
  const Validation v = validate(inst, sch);
  nlohmann::json doc = report_header("optpipe-simulate-report/1", inst.name);
  doc["schedule"] = a.schedule;
  doc.update(validation_json(inst, sch, v, a.timeline));
  print_json(doc);
  return v.valid() ? kOk : kNegative;
}

}  // namespace

CLI::App* add_simulate_command(CLI::App& app, SimulateArgs& args) {
  auto* cmd = app.add_subcommand("simulate", "Simulate a schedule: makespan, bubble, peak memory, a text Gantt chart");
  cmd->add_option("INSTANCE", args.instance, "instance file")->required();
  cmd->add_option("SCHEDULE", args.schedule, "schedule file")->required();
  cmd->add_flag("--no-gantt", args.no_gantt, "do not print the text Gantt chart");
  cmd->add_option("--width", args.width, "columns of the text Gantt chart (default: $COLUMNS or 120; up to twice as many when that "
                  "makes room for every microbatch number)");
  cmd->add_flag("--timeline", args.timeline, "print the start and end of every action and transfer");
  add_format_option(cmd, args.format);
  return cmd;
}

int run_simulate(const SimulateArgs& a) {
  if (a.format == "json") return simulate_json(a);
  auto pair = load_pair(a.instance, a.schedule);
  if (!pair) return kNegative;
  const auto& [inst, sch] = *pair;
  const SimResult sim = simulate(inst, sch);
  std::cout << describe_instance(inst) << "\n" << summarize(inst, sim) << explain_bottleneck(inst, sim);
  if (sim.feasible && sch.makespan && std::fabs(*sch.makespan - sim.makespan) > 1e-6) {
    std::cout << "note: the file says makespan " << fmt_ms(*sch.makespan) << "; simulated " << fmt_ms(sim.makespan)
              << "\n";
  }
  if (!a.no_gantt) print_gantt(std::cout, inst, sch, sim, a.width > 0 ? a.width : terminal_width());
  if (a.timeline) print_timeline(inst, sch, sim);
  return sim.feasible ? kOk : kNegative;
}

}  // namespace optpipe::cli
