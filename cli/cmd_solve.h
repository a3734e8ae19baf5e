// `optpipe solve`: the exact solver with a MILP-solver-style log.
#pragma once

#include <string>

namespace optpipe::cli {

struct SolveArgs {
  std::string instance, output, svg, log_format = "text";
  double time_limit = 60, gap = 0;
  long long node_limit = -1;
  int threads = 0;
  bool quiet = false, verbose = false;
  bool no_transposition = false;
  bool no_stage_relaxation = false;
  std::string bounds = "cpu";     // cpu, tbb, gpu or auto
  int batch_size = 0;
  double lns = 0;                  // share of the time limit for large neighbourhood search
  long long local_search = -1;  // simulations per improved warm start (0: none; < 0: from the time limit)
  std::string cache;               // schedule cache file (cache/); empty: the default path
  bool no_cache = false;           // neither read nor write the cache
};

int run_solve(const SolveArgs& args);

}  // namespace optpipe::cli
