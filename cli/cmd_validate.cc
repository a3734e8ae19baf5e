#include "cli/cmd_validate.h"

#include <algorithm>
#include <cmath>
#include <iostream>

#include "cli/exit_codes.h"
#include "cli/inputs.h"
#include "cli/report.h"
#include "model/simulator.h"
#include "model/validator.h"  // validate, obviously_infeasible

namespace optpipe::cli {

CLI::App* add_validate_command(CLI::App& app, ValidateArgs& args) {
  auto* cmd = app.add_subcommand("validate", "Check an instance file, or a schedule against every rule of the spec");
  cmd->add_option("INSTANCE", args.instance, "instance file")->required();
  cmd->add_option("SCHEDULE", args.schedule, "schedule file (optional)");
  return cmd;
}

namespace {

// A schedule file's informational fields (makespan, status) are claims: the simulation is what
// counts. Where they disagree, say so (issue 23: a hand-edited file kept its old makespan).
void warn_about_claims(const Schedule& sch, const SimResult& sim) {
  if (sch.makespan && std::abs(*sch.makespan - sim.makespan) > 1e-6 * std::max(1.0, sim.makespan)) {
    std::cout << "warning: the file says makespan " << fmt_ms(*sch.makespan) << ", the simulation gives "
              << fmt_ms(sim.makespan) << " (the file's field is informational; the simulation counts)\n";
  }
  if (sch.status == "infeasible") {
    std::cout << "warning: the file says status \"infeasible\", but the schedule fits and runs\n";
  } else if (sch.status == "optimal" && sch.bound && *sch.bound < sim.makespan - 1e-6 * std::max(1.0, sim.makespan)) {
    std::cout << "warning: the file says status \"optimal\" with bound " << fmt_ms(*sch.bound)
              << ", below the simulated makespan " << fmt_ms(sim.makespan) << ": not a proof of this schedule\n";
  }
}

}  // namespace

int run_validate(const ValidateArgs& a) {
  const Instance inst = load_instance_reporting(a.instance);
  if (a.schedule.empty()) {
    std::cout << "instance OK: " << describe_instance(inst) << "\n";
    if (auto why = obviously_infeasible(inst)) std::cout << "note: " << *why << "\n";
    return kOk;
  }
  auto pair = load_pair(a.instance, a.schedule);
  if (!pair) return kNegative;
  const Validation v = validate(pair->first, pair->second);
  if (!v.valid()) {
    std::cout << "invalid schedule:\n";
    for (const auto& x : v.violations) std::cout << "  [" << to_string(x.rule) << "] " << x.message << "\n";
    return kNegative;
  }
  std::cout << "valid: makespan " << fmt_ms(v.sim->makespan) << ", bubble " << fmt_percent(v.sim->bubble)
            << ", every device within its memory limit\n";
  warn_about_claims(pair->second, *v.sim);
  return kOk;
}

}  // namespace optpipe::cli
