#include "cli/cmd_validate.h"

#include <iostream>
#include <optional>
#include <utility>

#include "cli/exit_codes.h"
#include "cli/inputs.h"
#include "cli/json_output.h"
#include "cli/report.h"
#include "model/schedule_claims.h"
#include "model/simulator.h"
#include "model/validation_json.h"
#include "model/validator.h"  // validate, obviously_infeasible

namespace optpipe::cli {

CLI::App* add_validate_command(CLI::App& app, ValidateArgs& args) {
  auto* cmd = app.add_subcommand("validate", "Check an instance file, or a schedule against every rule of the spec");
  cmd->add_option("INSTANCE", args.instance, "instance file")->required();
  cmd->add_option("SCHEDULE", args.schedule, "schedule file (optional)");
  add_format_option(cmd, args.format);
  return cmd;
}

namespace {

// --format json: the instance alone (valid: its file loaded), or the schedule's check
// (model/validation_json.h); both with the note when no schedule of the instance can fit.
int validate_json(const ValidateArgs& a) {
  std::optional<std::pair<Instance, Schedule>> both;
  if (!a.schedule.empty()) both = load_both(a.instance, a.schedule);
  const Instance inst = both ? both->first : load_instance_reporting(a.instance);
  nlohmann::json doc = report_header("optpipe-validate-report/1", inst.name);
  doc["schedule"] = both ? nlohmann::json(a.schedule) : nlohmann::json(nullptr);
  bool valid = true;
  if (both) {
    const Validation v = validate(both->first, both->second);
    doc.update(validation_json(both->first, both->second, v));
    valid = v.valid();
  } else {
    const nlohmann::json none = nlohmann::json::array();
    doc.update({{"valid", true}, {"violations", none}, {"simulation", nullptr}, {"warnings", none}});
  }
  const auto why = obviously_infeasible(inst);
  doc["infeasible_instance"] = why ? nlohmann::json(*why) : nlohmann::json(nullptr);
  print_json(doc);
  return valid ? kOk : kNegative;
}

}  // namespace

int run_validate(const ValidateArgs& a) {
  if (a.format == "json") return validate_json(a);
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
  // The file's makespan and status are claims; where the simulation denies them, say so (issue 23).
  for (const std::string& w : claim_warnings(pair->second, *v.sim)) std::cout << "warning: " << w << "\n";
  return kOk;
}

}  // namespace optpipe::cli
