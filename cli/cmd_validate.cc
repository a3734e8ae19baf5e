#include "cli/cmd_validate.h"

#include <iostream>

#include "cli/exit_codes.h"
#include "cli/inputs.h"
#include "cli/report.h"
#include "model/validator.h"
#include "model/validator.h"  // obviously_infeasible

namespace optpipe::cli {

CLI::App* add_validate_command(CLI::App& app, ValidateArgs& args) {
  auto* cmd = app.add_subcommand("validate", "Check an instance file, or a schedule against every rule of the spec");
  cmd->add_option("INSTANCE", args.instance, "instance file")->required();
  cmd->add_option("SCHEDULE", args.schedule, "schedule file (optional)");
  return cmd;
}

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
  return kOk;
}

}  // namespace optpipe::cli
