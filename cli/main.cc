// `optpipe`: the command-line tool. A thin layer over the libraries: it parses flags, loads
// files, calls model/, heuristics/ and viz/, and prints. Exit codes: 0 success; 1 the answer
// is negative (an invalid or infeasible schedule, no heuristic fits); 2 bad input (a wrong
// flag, an unreadable or malformed file).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "cli/build_info.h"
#include "cli/charts.h"
#include "cli/cmd_cache.h"
#include "cli/cmd_devices.h"
#include "cli/cmd_export.h"
#include "cli/cmd_export_milp.h"
#include "cli/cmd_generate.h"
#include "cli/cmd_heuristics.h"
#include "cli/cmd_profile.h"
#include "cli/cmd_render.h"
#include "cli/cmd_schedule.h"
#include "cli/cmd_simulate.h"
#include "cli/cmd_solve.h"
#include "cli/cmd_train.h"
#include "cli/cmd_validate.h"
#include "cli/exit_codes.h"
#include "cli/inputs.h"
#include "cli/report.h"
#include "model/bytes.h"
#include "model/error.h"
#include "model/instance_io.h"
#include "milp/lp_writer.h"
#include "milp/milp_formulation.h"
#include "milp/mps_writer.h"
#include "model/schedule_io.h"
#include "search/solver.h"
#include "model/simulator.h"
#include "model/validator.h"
#include "heuristics/registry.h"
#include "kernels/cuda_devices.h"
#include "viz/gantt_svg.h"
#include "viz/gantt_text.h"

namespace optpipe::cli {
namespace {

// Diagnostics go to stderr as "optpipe: warning: ..." (and "optpipe: info: ..." with -v).
void setup_logging() {
  auto logger = spdlog::stderr_color_mt("optpipe");
  logger->set_pattern("optpipe: %^%l%$: %v");
  logger->set_level(spdlog::level::warn);
  spdlog::set_default_logger(logger);
}

int main_impl(int argc, char** argv) {
  setup_logging();
  CLI::App app{
      "optpipe: pipeline-parallel training schedules that fit in memory.\n"
      "Instances and schedules are JSON files (formats optpipe-instance/1 and optpipe-schedule/1)."};
  app.set_version_flag("--version", version_string());
  app.require_subcommand(1);
  app.footer("Exit codes: 0 success, 1 negative answer (invalid/infeasible schedule, nothing fits), 2 bad input.");

  ScheduleArgs sa;
  auto* schedule = add_schedule_command(app, sa);

  SimulateArgs ma;
  auto* sim = add_simulate_command(app, ma);

  ValidateArgs vd;
  auto* val = add_validate_command(app, vd);

  RenderArgs ra;
  auto* render = add_render_command(app, ra);

  SolveArgs va;
  auto* solve_cmd = app.add_subcommand("solve", "Find the optimal schedule (branch-and-bound), or the best within the limits");
  solve_cmd->add_option("INSTANCE", va.instance, "instance file")->required();
  solve_cmd->add_option("-o,--output", va.output, "write the schedule here (with status, bound and gap)");
  solve_cmd->add_option("--svg", va.svg, "write an SVG Gantt chart of the schedule here");
  solve_cmd->add_option("--time-limit", va.time_limit,
                        "seconds for the whole run, heuristics and local search included (default 60)")
      ->check(CLI::NonNegativeNumber);
  solve_cmd->add_option("--node-limit", va.node_limit, "stop after this many nodes")->check(CLI::NonNegativeNumber);
  solve_cmd->add_option("--gap", va.gap, "stop at this relative gap, e.g. 0.01 for 1% (default 0: prove optimality)")
      ->check(CLI::Range(0.0, 1.0));
  solve_cmd->add_option("--threads", va.threads, "worker threads (default: all)")->check(CLI::NonNegativeNumber);
  solve_cmd->add_option("--log-format", va.log_format, "text (default) or json (one object per line)")
      ->check(CLI::IsMember({"text", "json"}));
  solve_cmd->add_flag("-q,--quiet", va.quiet, "no header and no progress lines");
  solve_cmd->add_flag("-v,--verbose", va.verbose, "search statistics (prunes, bound calls)");
  solve_cmd->add_option("--local-search", va.local_search,
                        "simulations of local search on each of the 3 best warm starts (default: 2000 per second of the time "
                        "limit, 1000 to 200000; 0: none); it stops at 40% of the time limit in any case")
      ->check(CLI::NonNegativeNumber);
  solve_cmd->add_option("--lns", va.lns,
                        "share of the time limit for large neighbourhood search before the tree (default 0, e.g. 0.1)")
      ->check(CLI::Range(0.0, 1.0));
  solve_cmd->add_option("--bounds", va.bounds,
                        "where node bounds are computed: cpu (default: one node at a time, depth-first dives), tbb "
                        "(batches on the CPU), gpu (batches on a CUDA device), auto (gpu if present, else tbb)")
      ->check(CLI::IsMember({"cpu", "tbb", "gpu", "auto"}));
  solve_cmd->add_option("--batch-size", va.batch_size, "batch modes: most open nodes per batch (default: adaptive, up to 1024)")
      ->check(CLI::Range(0, 1 << 20));
  solve_cmd->add_flag("--no-transposition", va.no_transposition,
                      "do not cut nodes whose state another node dominates (for comparisons)");
  solve_cmd->add_flag("--no-stage-relaxation", va.no_stage_relaxation,
                      "do not bound with the single-stage relaxation, at the root or at the nodes (for comparisons)");
  solve_cmd->add_option("--cache", va.cache, "schedule cache file (default: $OPTPIPE_CACHE, else $XDG_CACHE_HOME/optpipe/schedules.sqlite)");
  solve_cmd->add_flag("--no-cache", va.no_cache, "neither read nor write the schedule cache");
  solve_cmd->footer("Ctrl-C stops the search and still writes the best schedule with its bound.");

  ExportMilpArgs ea;
  auto* export_milp = add_export_milp_command(app, ea);

  auto* list = add_heuristics_command(app);
  auto* devices = add_devices_command(app);
  add_generate_command(app);
  add_export_command(app);
  add_train_command(app);
  add_profile_command(app);
  add_cache_command(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? kOk : kBadInput;
  }
  if (*schedule) return run_schedule(sa);
  if (*sim) return run_simulate(ma);
  if (*val) return run_validate(vd);
  if (*render) return run_render(ra);
  if (*solve_cmd) return run_solve(va);
  if (*export_milp) return run_export_milp(ea);
  if (*list) return run_heuristics();
  if (*devices) return run_devices();
  return kBadInput;
}

}  // namespace
}  // namespace optpipe::cli

int main(int argc, char** argv) {
  try {
    return optpipe::cli::main_impl(argc, argv);
  } catch (const optpipe::InputError& e) {
    std::cout.flush();
    std::cerr << "optpipe: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cout.flush();
    std::cerr << "optpipe: internal error: " << e.what() << "\n";
    return 3;
  }
}
