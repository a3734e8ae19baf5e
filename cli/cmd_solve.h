// `optpipe solve`: the solve pipeline (solve/solve_pipeline.h) with a MILP-solver-style log
// (solve/text_reporter.h) or JSON lines (solve/json_reporter.h); writes the schedule and chart.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace optpipe::cli {

struct SolveArgs {
  std::string instance, output, svg, log_format = "text";
  double time_limit = 60, gap = 0;
  long long node_limit = -1;
  int threads = 0;
  bool quiet = false, verbose = false;
  bool no_transposition = false;
  bool no_stage_relaxation = false;
  bool no_device_relaxation = false;
  bool no_probing = false;
  std::int64_t two_devices = 0;
  std::string bounds = "cpu";     // cpu, tbb, gpu or auto
  int batch_size = 0;
  std::string pool_memory = "1GiB";  // memory for the open nodes
  double lns = 0;                  // share of the time limit for large neighbourhood search
  long long local_search = -1;  // simulations per improved warm start (0: none; < 0: from the time limit)
  std::string cache;               // schedule cache file (cache/); empty: the default path
  bool no_cache = false;           // neither read nor write the cache
  std::vector<std::string> warm_starts;  // schedule files to start from (--warm-start)
};

// Registers the `solve` subcommand on `app` with its flags bound to `args`, which must outlive
// the parse; main runs run_solve when the returned subcommand was given.
CLI::App* add_solve_command(CLI::App& app, SolveArgs& args);

// kOk, or kNegative when the instance is infeasible or no schedule was found; bad input throws
// InputError.
int run_solve(const SolveArgs& args);

}  // namespace optpipe::cli
