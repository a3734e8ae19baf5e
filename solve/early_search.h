// The heuristics with a local search beside them (issue 21: both cores from the start). At scale
// a few heuristics (AdaOffload, PipeOffload, Waves) take seconds while the others are done in
// milliseconds, and a core idles meanwhile; here, as soon as a heuristic's schedule fits, a local
// search in rounds (heuristics/improve_rounds.h, one thread) improves the best one so far until
// the last heuristic is done, and its schedule joins the warm starts (WarmStartOptions::extra).
//
// Only under a time limit: how far the search gets depends on when the heuristics finish, so with
// a fixed budget (--local-search N) solve_pipeline does not use it and stays deterministic.
//
// Complexity: that of the heuristics, plus the search for as long as they run.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "heuristics/registry.h"
#include "model/instance.h"
#include "model/schedule.h"

namespace optpipe {

struct EarlySearch {
  BestResult heuristics;
  std::optional<Schedule> improved;  // what the search found (nullopt: it did not improve anything)
  std::string from;                  // the schedule it improved (its solver's name)
  double before = 0, after = 0;      // makespans: of that schedule, and of what the search made of it
  std::int64_t evaluations = 0;
  double seconds = 0;
};

// Runs every heuristic (run_all_heuristics, `progress` after each, within `limits`) and the
// search beside them. `target`: a proven lower bound (the root's cheap bounds); when the search
// reaches it the schedule is optimal, and the heuristics still running are stopped.
EarlySearch run_heuristics_beside_search(const Instance& instance,
                                         const std::function<void(const HeuristicResult&)>& progress,
                                         const RunLimits& limits, double target = 0);

}  // namespace optpipe
