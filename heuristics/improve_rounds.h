// Iterated local search in synchronised rounds, for large instances where the local search is
// the whole primal side (solve/solve_pipeline.h): every round runs a fixed number of independent
// local searches (local_search.h), each from one of the few best distinct schedules so far with a
// seed of its own, on a fixed evaluation budget; at the round's end the results join the pool
// and the best is kept. A parallel multi-start local search with restarts from elite solutions
// (E.-G. Talbi, "Metaheuristics: From Design to Implementation", Wiley 2009, §6.1.4 (parallel
// multi-start model) and §2.5 (elitist restarts)).
//
// Why rounds: the searches of a round run on all threads at once (TBB), and share what they
// found only at the round's end, in the order of their task index, so the result depends on the
// evaluation budget and never on the number of threads. Under a time limit the round in progress
// stops early, and how many rounds ran depends on the machine.
//
// Complexity: rounds x tasks x evaluations_per_task simulations.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "model/instance.h"
#include "model/schedule.h"

namespace optpipe {

struct RoundsOptions {
  int tasks = 4;                                // local searches per round (not the threads)
  std::int64_t evaluations_per_task = 0;        // per search and round; 0: rounds_task_budget()
  std::int64_t max_evaluations = -1;            // over every round and task; < 0: until stopped
  int pool = 3;                                 // distinct best schedules the searches start from
  double time_limit = std::numeric_limits<double>::infinity();  // seconds
  double target = -std::numeric_limits<double>::infinity();     // a proven lower bound: stop there
  std::uint64_t seed = 1;
  int threads = 0;                              // threads the searches of a round share; 0: all
  const std::atomic<bool>* stop = nullptr;      // from outside (Ctrl-C)
  // Called after each round that improved the best (from the calling thread): seconds since the
  // start and the new best makespan.
  std::function<void(double, double)> on_improve;
  // ... and with the new best schedule itself (e.g. SolveOptions::beside's offer).
  std::function<void(const Schedule&, double makespan)> on_new_best;
};

struct RoundsStats {
  int rounds = 0;
  std::int64_t evaluations = 0;
  double start_makespan = 0, final_makespan = 0, seconds = 0;
};

// A search budget per task that takes about a second on one core of the development machine
// (about 3 million simulated actions): 12e6 / actions, within [500, 20000].
std::int64_t rounds_task_budget(const Instance& instance);

// The best schedule found from `starts` (valid, feasible ones; others are skipped); the best
// start itself when nothing improves it. Empty lists when no start is usable.
Schedule improve_in_rounds(const Instance& instance, const std::vector<Schedule>& starts, const RoundsOptions& options = {},
                           RoundsStats* stats = nullptr);

}  // namespace optpipe
