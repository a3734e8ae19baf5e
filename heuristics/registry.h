// The list of baseline heuristics, lookup by name, and "best": run them all, keep the fastest
// schedule that fits.
#pragma once

#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "heuristics/heuristic.h"

namespace optpipe {

// Every heuristic, in the order reports list them.
const std::vector<std::unique_ptr<Heuristic>>& all_heuristics();
// nullptr when there is no heuristic of that name.
const Heuristic* find_heuristic(const std::string& name);
// "gpipe, 1f1b, ..." for help texts and error messages.
std::string heuristic_names();

struct BestResult {
  std::vector<HeuristicResult> results;  // one per heuristic, in all_heuristics() order
  int best = -1;                         // index of the best feasible result, -1 if none

  const HeuristicResult* best_result() const { return best >= 0 ? &results[best] : nullptr; }
};

// Runs every heuristic (in parallel when `parallel`), picks the smallest makespan among the
// feasible ones (ties: the earlier in the list). `progress` is called after each heuristic.
// `limits`: every heuristic stops looking at the deadline or the stop request (RunLimits).
// `bound`: a lower bound on the makespan (e.g. the root's, search/solver.h), or -infinity. With
// one, the heuristics that search (Heuristic::searches) run after the others, and not at all
// where one of those already meets it (within kTimeEps): the best is then the same schedule,
// since they come later in the list and none can be better. They get a result saying so.
BestResult run_all_heuristics(const Instance& instance, bool parallel = true,
                              const std::function<void(const HeuristicResult&)>& progress = {},
                              const RunLimits& limits = {},
                              double bound = -std::numeric_limits<double>::infinity());

}  // namespace optpipe
