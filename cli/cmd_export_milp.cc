#include "cli/cmd_export_milp.h"

#include <filesystem>
#include <iostream>
#include <optional>
#include <string>

#include "cli/exit_codes.h"
#include "cli/inputs.h"
#include "cli/report.h"
#include "cli/validators.h"
#include "model/error.h"
#include "model/instance_io.h"
#include "model/schedule_io.h"
#include "model/simulator.h"
#include "model/validator.h"
#include "milp/lp_writer.h"
#include "milp/milp_formulation.h"
#include "milp/mps_writer.h"
#include "model/validator.h"  // obviously_infeasible
#include "heuristics/registry.h"

namespace optpipe::cli {

CLI::App* add_export_milp_command(CLI::App& app, ExportMilpArgs& args) {
  auto* cmd = app.add_subcommand("export-milp", "Write the instance as a MILP (CPLEX LP or free MPS) for a general solver");
  cmd->add_option("INSTANCE", args.instance, "instance file")->required();
  cmd->add_option("-o,--output", args.output, "model file to write: .lp (CPLEX LP) or .mps (free MPS)")->required();
  cmd->add_option("--format", args.format, "lp or mps (default: from the extension of -o)")
      ->check(CLI::IsMember({"lp", "mps"}));
  cmd->add_option("--warm-start", args.warm_start,
                  "schedule file: also write a MIP start (CBC's -mips format) beside the model, as NAME.mst");
  cmd->add_option("--big-m", args.big_m,
                  "upper bound on the makespan in ms, the big-M (default: the best heuristic's makespan)")
      ->check(more_than(0));
  cmd->footer("Without offload the MILP is exact; with offload it is a relaxation (optimum <= the spec's). "
              "See milp/README.md.");
  return cmd;
}

int run_export_milp(const ExportMilpArgs& a) {
  std::string format = a.format;
  if (format.empty()) {
    std::string ext = std::filesystem::path(a.output).extension().string();
    if (!ext.empty()) ext.erase(0, 1);  // without the dot
    if (ext == "lp" || ext == "mps") {
      format = ext;
    } else {
      throw InputError(a.output + ": unknown model file extension \"" + ext +
                       "\" (use .lp for CPLEX LP or .mps for free MPS, or --format lp|mps)");
    }
  }
  const Instance inst = load_instance_reporting(a.instance);
  std::cout << describe_instance(inst) << "\n";
  if (auto why = obviously_infeasible(inst)) {
    std::cout << *why << "\n";
    return kNegative;
  }
  // Big-M: an upper bound on the optimum, the best heuristic's makespan unless given.
  double horizon = a.big_m;
  std::string horizon_from = "--big-m";
  if (!(horizon > 0)) {
    const BestResult best = run_all_heuristics(inst);
    const HeuristicResult* chosen = best.best_result();
    if (!chosen) {
      std::cout << "no heuristic found a schedule that fits in memory: give an upper bound with --big-m\n";
      return kNegative;
    }
    horizon = chosen->sim.makespan;
    horizon_from = "heuristic " + chosen->name;
  }
  std::optional<Schedule> warm;
  if (!a.warm_start.empty()) {
    warm = load_schedule(a.warm_start);
    const auto problems = check_structure(inst, *warm);
    if (!problems.empty()) {
      throw InputError(a.warm_start + ": not a valid schedule of this instance: " + problems.front().message);
    }
    const SimResult sim = simulate(inst, *warm);
    if (!sim.feasible) throw InputError(a.warm_start + ": the warm start is infeasible: " + sim.reason);
    if (sim.makespan > horizon) {
      horizon = sim.makespan;  // the warm start must fit under the big-M
      horizon_from = "the warm start";
    }
  }
  const milp::Formulation f = milp::build_formulation(inst, horizon, warm ? &*warm : nullptr);
  write_text_file(a.output, format == "lp" ? milp::lp_text(f.model) : milp::mps_text(f.model));
  std::cout << "wrote " << a.output << " (" << (format == "lp" ? "CPLEX LP" : "free MPS") << "): " << milp::summary(f)
            << " (from " << horizon_from << ")\n";
  if (warm) {
    const std::string start_path = std::filesystem::path(a.output).replace_extension(".mst").string();
    write_text_file(start_path, milp::mip_start_text(f));
    std::cout << "wrote " << start_path << " (MIP start, makespan " << fmt_ms(f.start_makespan)
              << "; e.g. cbc " << a.output << " -mips " << start_path << " solve)\n";
  }
  return kOk;
}

}  // namespace optpipe::cli
