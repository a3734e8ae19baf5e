// Warm starts for the exact solver: every heuristic's schedule, plus the best few of them
// improved by local search (local_search.h). The solver's first incumbent is the best of these;
// on memory-tight instances the improved ones are often far better than any fixed pattern
// (gpt-8x24-tight: 764.94 -> about 670 ms).
//
// build_warm_starts without a bound is deterministic: local search runs on fixed evaluation
// budgets, one start per task (TBB), and the result does not depend on the number of threads.
// The phased one with a bound (below) runs its thorough bound beside the full local search when
// it has two threads; then which searches ran how far depends on timing, though a schedule that
// meets the bound is an optimum either way. Complexity: k x evaluations simulations.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "model/action.h"
#include "model/instance.h"
#include "model/schedule.h"
#include "heuristics/registry.h"

namespace optpipe {

struct ImprovedStart {
  std::string heuristic;                 // the heuristic whose schedule was improved ("X + <guide_name>":
                                         // X's schedule with WarmStartOptions::guide in it)
  double before = 0, after = 0;          // makespans
  std::int64_t evaluations = 0;
  double seconds = 0;
};

struct WarmStartOptions {
  int improve_best = 3;                  // improve this many of the best heuristic schedules (distinct makespans)
  std::int64_t evaluations = 20000;      // local search budget per improved start (0: no local search)
  // The quick phase's budget per start (bounded_warm_starts below): < 0, a twentieth of
  // `evaluations`, at least 1000 (and at most `evaluations`).
  std::int64_t quick_evaluations = -1;
  // The quick phase's starts besides the guide's hybrid: the best this many heuristic schedules
  // (< 0: improve_best). On small instances (solve_pipeline.h) the quick phase is there for a
  // first incumbent, for the tree first or the relaxation's cutoff, and the guide's hybrid and
  // the best heuristic give it: 1 there (bench/README.md, "The quick phase from two starts").
  int quick_improve_best = -1;
  // Each local search run of this phase stops after this many simulations without a new best
  // (LocalSearchOptions::stall_evaluations; <= 0: never), and the quick phase's runs after
  // quick_stall_evaluations.
  std::int64_t stall_evaluations = 0;
  std::int64_t quick_stall_evaluations = 0;
  // Wall-clock cap for the local search phase (seconds); when it binds, the result depends on
  // the machine's speed. Infinity: only the evaluation budget counts (deterministic).
  double time_limit = std::numeric_limits<double>::infinity();
  // A proven lower bound on the makespan (e.g. the solver's root bound: root_lower_bound in
  // search/solver.h): no local search runs when a heuristic already meets it, and all
  // stop as soon as one reaches it. -inf: none.
  double target = -std::numeric_limits<double>::infinity();
  // A list for one device (e.g. the root relaxation's order: RootBound in
  // search/solver.h). Each feasible heuristic schedule gets it in place of that device's
  // list, best heuristic first; the first such hybrid that is valid and feasible is improved by
  // local search too, before the others. guide_device -1: none.
  int guide_device = -1;
  std::vector<Action> guide;
  std::string guide_name = "guide";  // what the improved start is called: "<heuristic> + <guide_name>"
  // Set from outside (e.g. Ctrl-C): the local searches stop and return what they have.
  const std::atomic<bool>* stop = nullptr;
  // Large instances (solve_pipeline.h): the full phase runs as synchronised rounds of local
  // searches (improve_rounds.h) from the best schedules so far (the guide's hybrid, the quick
  // phase's results and the heuristics) until time_limit, or until round_evaluations
  // simulations in all (< 0: only the time limit stops it), instead of one search per start.
  bool rounds = false;
  std::int64_t round_evaluations = -1;
  int threads = 0;  // the rounds' threads (0: all)
  // Called when a local search run ends, or a round improves the best (from any thread; the
  // caller serialises): its makespan and what it started from. For traces (solve_pipeline.h).
  std::function<void(double makespan, const std::string& from)> on_improved;
  // Schedules found before (at scale: the local search run beside the slow heuristics,
  // solve/early_search.h), with the run that found each (same order): warm starts like the
  // heuristics' own, starts of the rounds, reported first among the improved starts.
  std::vector<Schedule> extra;
  std::vector<ImprovedStart> extra_runs;
};

// The local search budget `optpipe solve` uses for a time limit of `seconds`: 2000 simulations a
// second of the limit, at least 1000 and at most 200000 (10 s: 20000).
std::int64_t local_search_budget(double seconds);


struct WarmStarts {
  std::vector<Schedule> schedules;       // every feasible heuristic schedule, then the improved ones
  std::vector<ImprovedStart> improved;   // one per local search run, best heuristic first
  bool reached_target = false;           // a schedule meets WarmStartOptions::target
};

WarmStarts build_warm_starts(const Instance& instance, const BestResult& heuristics, const WarmStartOptions& options = {});

// A lower bound on the makespan with a list for one device to guide a local search (both from
// the caller, e.g. the solver's root bound and its relaxation's order: root_lower_bound in
// search/solver.h, which this layer does not see).
struct GuidedBound {
  double bound = 0;
  int device = -1;           // -1: no guide
  std::vector<Action> order;
  bool relaxation = false;   // the thorough bound's relaxation ran (it is not tried everywhere)
};
// `thorough` false: only what is cheap (microseconds, and the device relaxation's node-limited
// search: milliseconds on small instances), possibly with a guide; true: everything (up to
// seconds), with `incumbent` as the cutoff. `stop` (never null): once set, the bound is no longer
// needed (a schedule met a bound already known, or the caller stopped): return what is proven
// so far.
using RootBoundFn = std::function<GuidedBound(double incumbent, bool thorough, const std::atomic<bool>* stop)>;

struct BoundedWarmStarts {
  WarmStarts starts;          // both phases' schedules and improved starts, quick ones first
  int quick_runs = 0;         // how many of starts.improved are the quick phase's
  double bound = 0;           // the best lower bound obtained (never below options.target)
  double bound_seconds = 0;   // spent computing it
  bool thorough = false;      // the thorough bound was computed
  bool relaxation = false;    // ... with its relaxation (GuidedBound::relaxation)
  bool ended_by_caller = false;  // the between-phases hook had the answer (see below)
};

// A bound between the cheap and the thorough one, asked right after the cheap one with the best
// schedule so far as the cutoff, before the quick phase, whose searches then stop at it: e.g. the
// thorough bound's relaxations within a small node budget (solve_pipeline.h). Same contract as
// RootBoundFn otherwise.
using BriefBoundFn = std::function<GuidedBound(double incumbent, const std::atomic<bool>* stop)>;

// Called between the quick and the thorough phase, when the quick one did not reach the cheap
// bound, with every schedule so far: returns true when the caller has its answer (e.g. a short
// exact search proved the optimum), which ends the warm starts there.
using BetweenPhasesFn = std::function<bool(const WarmStarts& so_far)>;

// Warm starts in phases, cheap before expensive: the cheap bound (and the brief one, when given);
// a quick local search (a 20th of options.evaluations per start, at least 1000) that stops at it;
// only if that does not reach it, the thorough bound with the best schedule so far as the cutoff,
// and the full local search
// (the rest of the budget, from the heuristics again, the thorough bound's guide first) that
// stops at it.
//
// With two threads or more (and not in rounds) the thorough bound and the full local search from
// the heuristics run side by side: the bound's thread then runs the search from its guide, the
// other searches take the bound as their target as soon as it is known, and when any schedule
// meets the best bound known, everything stops (the bound too: it can only prove what is already
// proven). On offload-fast-pcie-4x8 the search from pipe-offload meets the cheap bound in 0.03 s
// while the relaxation, which shows nothing more there, would take 0.2 s; on
// offload-slow-pcie-4x8 the relaxation's bound and order finish it. With one thread the phases
// run one after the other, as above. Either way the makespan found when the bound is met is the
// optimum; which searches ran how long then depends on the threads' timing.
//
// The bound callback runs on a worker thread in the side-by-side mode.
BoundedWarmStarts build_warm_starts(const Instance& instance, const BestResult& heuristics,
                                    const WarmStartOptions& options, const RootBoundFn& bound,
                                    const BetweenPhasesFn& between_phases = {}, const BriefBoundFn& brief = {});

}  // namespace optpipe
