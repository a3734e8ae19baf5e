// Large neighbourhood search (LNS) around an incumbent schedule, with the exact solver as the
// repair step: P. Shaw, "Using constraint programming and local search methods to solve vehicle
// routing problems", CP 1998 (LNS); for scheduling, e.g. Godard, Laborie & Nuijten, "Randomized
// Large Neighborhood Search for Cumulative Scheduling", ICAPS 2005.
//
// A neighbourhood frees the ops of a window of consecutive microbatches: every other action
// keeps its order in its device's list and its offload level, the freed ones may be placed
// anywhere between them (with any offload level and reload position). The branch-and-bound
// (solver.h, SolveOptions::neighbourhood) searches that neighbourhood under a node budget with
// the incumbent as its cutoff, so it only returns strictly better schedules. Windows slide over
// the microbatches; passes repeat while they improve. Pipelines couple neighbouring microbatches
// (warm-up, steady state, cool-down), so windows of 2-3 microbatches move whole phases at once,
// which single-op swaps cannot.
//
// Deterministic: one thread per repair, node budgets (the optional time limit and stop flag only
// end it early). Complexity: (passes x windows) repairs of at most `nodes_per_window` nodes each.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>

#include "model/instance.h"
#include "model/schedule.h"

namespace optpipe {

struct LnsOptions {
  int window = 2;                        // microbatches freed per neighbourhood
  std::int64_t nodes_per_window = 3000;  // node budget of each repair
  int max_passes = 4;                    // sweeps over all windows (stops early without gain)
  double time_limit = std::numeric_limits<double>::infinity();  // seconds, for the whole search
  const std::atomic<bool>* stop = nullptr;
};

struct LnsStats {
  int repairs = 0, improvements = 0, passes = 0;
  std::int64_t nodes = 0;
  double start_makespan = 0, final_makespan = 0, seconds = 0;
};

// A schedule no worse than `start` (which must be valid and feasible; otherwise it is returned
// as is).
Schedule improve_by_lns(const Instance& instance, const Schedule& start, const LnsOptions& options = {},
                        LnsStats* stats = nullptr);

}  // namespace optpipe
