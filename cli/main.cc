// `optpipe`: the command-line tool. A thin layer over the libraries: it parses flags, loads
// files, calls model/, heuristics/ and viz/, and prints. Exit codes (cli/exit_codes.h): 0
// success; 1 the answer is negative (an invalid or infeasible schedule, no heuristic fits); 2
// bad input (a wrong flag, an unreadable or malformed file); 3 a run failed, or a bug.
//
// Each subcommand lives in its own cmd_<name>.cc; this file sets up the app, registers them in
// the order --help lists them, and runs the one given.
#include <exception>
#include <iostream>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "cli/build_info.h"
#include "cli/cmd_cache.h"
#include "cli/cmd_devices.h"
#include "cli/cmd_export.h"
#include "cli/cmd_export_milp.h"
#include "cli/cmd_frontier.h"
#include "cli/cmd_generate.h"
#include "cli/cmd_heuristics.h"
#include "cli/cmd_partition.h"
#include "cli/cmd_plan.h"
#include "cli/cmd_profile.h"
#include "cli/cmd_render.h"
#include "cli/cmd_schedule.h"
#include "cli/cmd_simulate.h"
#include "cli/cmd_solve.h"
#include "cli/cmd_train.h"
#include "cli/cmd_validate.h"
#include "cli/exit_codes.h"
#include "cli/json_output.h"
#include "cli/suggest.h"
#include "model/error.h"

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
  app.footer("Exit codes: 0 success, 1 negative answer (invalid/infeasible schedule, nothing fits), 2 bad input, "
             "3 a run failed (train) or an internal error.");

  ScheduleArgs schedule_args;
  auto* schedule = add_schedule_command(app, schedule_args);

  SimulateArgs simulate_args;
  auto* simulate = add_simulate_command(app, simulate_args);

  ValidateArgs validate_args;
  auto* validate = add_validate_command(app, validate_args);

  RenderArgs render_args;
  auto* render = add_render_command(app, render_args);

  SolveArgs solve_args;
  auto* solve = add_solve_command(app, solve_args);

  ExportMilpArgs export_milp_args;
  auto* export_milp = add_export_milp_command(app, export_milp_args);

  auto* heuristics = add_heuristics_command(app);
  auto* devices = add_devices_command(app);
  add_generate_command(app);
  add_partition_command(app);
  add_plan_command(app);
  add_export_command(app);
  add_frontier_command(app);
  add_train_command(app);
  add_profile_command(app);
  add_cache_command(app);

  if (const std::string unknown = unknown_subcommand(app, argc, argv); !unknown.empty()) {
    std::cerr << "optpipe: error: " << unknown << "\n";
    return kBadInput;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    if (code != 0) {
      const std::string hint = did_you_mean(app, argc, argv);
      if (!hint.empty()) std::cerr << "optpipe: " << hint << "\n";
      print_json_error(argc, argv, std::string(e.what()) + (hint.empty() ? "" : " (" + hint + ")"), kBadInput);
    }
    return code == 0 ? kOk : kBadInput;
  }
  if (*schedule) return run_schedule(schedule_args);
  if (*simulate) return run_simulate(simulate_args);
  if (*validate) return run_validate(validate_args);
  if (*render) return run_render(render_args);
  if (*solve) return run_solve(solve_args);
  if (*export_milp) return run_export_milp(export_milp_args);
  if (*heuristics) return run_heuristics();
  if (*devices) return run_devices();
  return kBadInput;
}

}  // namespace
}  // namespace optpipe::cli

namespace {

// The message on stderr, and for a command line that asks for JSON its error document on
// stdout (cli/json_output.h); returns `code`.
int fail(int argc, char** argv, int code, const std::string& kind, const std::string& message) {
  std::cout.flush();
  std::cerr << "optpipe: " << kind << message << "\n";
  optpipe::cli::print_json_error(argc, argv, message, code);
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return optpipe::cli::main_impl(argc, argv);
  } catch (const optpipe::InputError& e) {
    return fail(argc, argv, optpipe::cli::kBadInput, "error: ", e.what());
  } catch (const optpipe::cli::NegativeAnswer& e) {
    return fail(argc, argv, optpipe::cli::kNegative, "", e.what());
  } catch (const optpipe::cli::RunFailed& e) {
    return fail(argc, argv, optpipe::cli::kRunFailed, "error: ", e.what());
  } catch (const std::exception& e) {
    return fail(argc, argv, 3, "internal error: ", e.what());
  }
}
