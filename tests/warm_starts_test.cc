// Warm starts (heuristics/warm_starts.h): every heuristic schedule plus the best few improved by
// local search, valid, never worse than where they started, and the same on every call.
#include "heuristics/warm_starts.h"

#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>

#include "model/instance_io.h"
#include "search/solver.h"
#include "model/simulator.h"
#include "model/validator.h"
#include "tests/sanitized.h"
#include "tests/test_paths.h"
#include "tests/test_util.h"

namespace optpipe {
namespace {

TEST(WarmStarts, ImprovedStartsAreValidNoWorseAndDeterministic) {
  std::mt19937 rng(17);
  int improved = 0, runs = 0;
  const SimOptions quiet = SimOptions::quiet();
  for (int i = 0; i < 12; ++i) {
    test_support::RandomInstanceOptions o;
    o.min_devices = 2;
    o.max_microbatches = 5;
    o.tight_memory = i % 2 == 0;
    const Instance inst = test_support::random_instance(rng, o);
    const BestResult heur = run_all_heuristics(inst);
    WarmStartOptions wo;
    wo.evaluations = 1500;
    const WarmStarts ws = build_warm_starts(inst, heur, wo);
    int feasible = 0;
    for (const auto& r : heur.results) feasible += r.ok() ? 1 : 0;
    SCOPED_TRACE("instance " + std::to_string(i));
    ASSERT_EQ(ws.schedules.size(), static_cast<std::size_t>(feasible) + ws.improved.size());
    EXPECT_LE(ws.improved.size(), 3u);
    if (feasible > 0) EXPECT_GE(ws.improved.size(), 1u);
    for (std::size_t k = 0; k < ws.improved.size(); ++k) {
      const Schedule& s = ws.schedules[static_cast<std::size_t>(feasible) + k];
      ASSERT_TRUE(check_structure(inst, s).empty());
      const SimResult r = simulate(inst, s, quiet);
      ASSERT_TRUE(r.feasible);
      EXPECT_NEAR(r.makespan, ws.improved[k].after, 1e-9);
      EXPECT_LE(ws.improved[k].after, ws.improved[k].before + 1e-9);
      if (k > 0) EXPECT_GT(ws.improved[k].before, ws.improved[k - 1].before);  // distinct, best first
      improved += ws.improved[k].after < ws.improved[k].before - 1e-9 ? 1 : 0;
      ++runs;
    }
    if (ws.improved.empty()) continue;
    const WarmStarts again = build_warm_starts(inst, heur, wo);
    ASSERT_EQ(again.schedules.size(), ws.schedules.size());
    EXPECT_EQ(again.schedules.back().devices, ws.schedules.back().devices);
  }
  EXPECT_GT(runs, 12);
  EXPECT_GT(improved, 0);
}

TEST(WarmStarts, NoLocalSearchWhenTheBudgetIsZero) {
  const Instance inst = test_support::uniform_instance(3, 6, 1, 1, 1);
  WarmStartOptions wo;
  wo.evaluations = 0;
  const WarmStarts ws = build_warm_starts(inst, run_all_heuristics(inst), wo);
  EXPECT_TRUE(ws.improved.empty());
  EXPECT_FALSE(ws.schedules.empty());
}

}  // namespace
}  // namespace optpipe

namespace optpipe {
namespace {

TEST(WarmStarts, TimeLimitStopsTheLocalSearchEarly) {
  const Instance inst = test_support::uniform_instance(4, 12, 1, 1.3, 0.7);
  const BestResult heur = run_all_heuristics(inst);
  WarmStartOptions wo;
  wo.evaluations = 100000000;  // far more than 0.2 s allows
  wo.time_limit = 0.2;
  const auto t0 = std::chrono::steady_clock::now();
  const WarmStarts ws = build_warm_starts(inst, heur, wo);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
  ASSERT_FALSE(ws.improved.empty());
  for (const ImprovedStart& i : ws.improved) {
    EXPECT_LT(i.evaluations, wo.evaluations);
    EXPECT_LE(i.after, i.before + 1e-9);
  }
}

// With a target (a proven lower bound): no local search when a heuristic meets it; otherwise
// every run stops once one reaches it (here the target is what a first run reached).
TEST(WarmStarts, TargetStopsTheLocalSearch) {
  std::mt19937 rng(23);
  int checked = 0, saved = 0;
  for (int n = 0; n < 40 && checked < 3; ++n) {
    test_support::RandomInstanceOptions o;
    o.min_devices = 3;
    o.min_microbatches = 4;
    o.tight_memory = true;
    const Instance inst = test_support::random_instance(rng, o);
    const BestResult heur = run_all_heuristics(inst);
    if (!heur.best_result()) continue;
    WarmStartOptions wo;
    wo.evaluations = 4000;
    const WarmStarts free = build_warm_starts(inst, heur, wo);
    double best = std::numeric_limits<double>::infinity();
    for (const ImprovedStart& i : free.improved) best = std::min(best, i.after);
    if (!(best < heur.best_result()->sim.makespan - 1e-6)) continue;  // the runs did not improve on the heuristics
    SCOPED_TRACE("instance " + std::to_string(n));
    ++checked;
    EXPECT_FALSE(free.reached_target);
    wo.target = heur.best_result()->sim.makespan;  // a heuristic meets it: no local search
    const WarmStarts met = build_warm_starts(inst, heur, wo);
    EXPECT_TRUE(met.reached_target);
    EXPECT_TRUE(met.improved.empty());
    wo.target = best;  // what the first runs reached: all stop once one reaches it
    const WarmStarts aimed = build_warm_starts(inst, heur, wo);
    EXPECT_TRUE(aimed.reached_target);
    std::int64_t spent = 0, spent_free = 0;
    double aimed_best = std::numeric_limits<double>::infinity();
    for (const ImprovedStart& i : aimed.improved) {
      spent += i.evaluations;
      aimed_best = std::min(aimed_best, i.after);
    }
    for (const ImprovedStart& i : free.improved) spent_free += i.evaluations;
    EXPECT_NEAR(aimed_best, best, 1e-9);
    // Never more than without the target; strictly less unless the run that reaches it does so
    // at its last evaluation while the others (in parallel, on as many cores as there are) have
    // already finished theirs: that depends on the cores, so it is counted, not asserted.
    EXPECT_LE(spent, spent_free);
    ASSERT_EQ(aimed.improved.size(), free.improved.size());
    for (std::size_t k = 0; k < aimed.improved.size(); ++k) {
      EXPECT_LE(aimed.improved[k].evaluations, free.improved[k].evaluations) << aimed.improved[k].heuristic;
    }
    saved += spent < spent_free;
  }
  EXPECT_EQ(checked, 3);
  std::printf("[ warm     ] the target saved evaluations on %d of %d instances\n", saved, checked);
}

// A guide list for one device (here the root relaxation's order of offload-slow-pcie-4x8's
// first stage) goes into the heuristics' schedules; the first valid and feasible hybrid is
// improved first, and with the root bound as the target it reaches the optimum within a few
// hundred simulations (from the heuristics alone: about 90k).
TEST(WarmStarts, AGuideListStartsOneMoreLocalSearch) {
  SKIP_UNDER_SANITIZERS("it needs the root relaxation to finish within its wall-time budget (at most 2 s), which the sanitizers' slowdown exceeds");
  const Instance inst = load_instance(std::string(OPTPIPE_SOURCE_DIR) + "/instances/offload-slow-pcie-4x8.json");
  const BestResult heur = run_all_heuristics(inst);
  const RootBound root = root_lower_bound(inst, heur.best_result()->sim.makespan);
  ASSERT_EQ(root.device, 0);
  ASSERT_FALSE(root.order.empty());
  WarmStartOptions wo;
  wo.evaluations = 20000;
  wo.target = root.bound;
  wo.guide_device = root.device;
  wo.guide = root.order;
  wo.guide_name = "relaxed order";
  const WarmStarts ws = build_warm_starts(inst, heur, wo);
  ASSERT_FALSE(ws.improved.empty());
  EXPECT_EQ(ws.improved.front().heuristic, heur.best_result()->name + " + relaxed order");
  EXPECT_TRUE(ws.reached_target);
  EXPECT_NEAR(ws.improved.front().after, 341.92, 1e-6);
  EXPECT_LT(ws.improved.front().evaluations, 2000);
  // The improved hybrid is among the schedules, valid and at the optimum.
  bool found = false;
  for (const Schedule& sch : ws.schedules) {
    const SimResult r = simulate(inst, sch);
    found = found || (r.feasible && std::abs(r.makespan - 341.92) < 1e-6 && check_structure(inst, sch).empty());
  }
  EXPECT_TRUE(found);
  // A guide that does not fit (a device it does not belong to) is left out.
  wo.guide_device = 1;
  const WarmStarts wrong = build_warm_starts(inst, heur, wo);
  for (const ImprovedStart& i : wrong.improved) EXPECT_EQ(i.heuristic.find("relaxed order"), std::string::npos);
}

// The least makespan of the feasible schedules among `schedules` (infinity: none).
double best_feasible(const Instance& inst, const std::vector<Schedule>& schedules) {
  double best = std::numeric_limits<double>::infinity();
  for (const Schedule& sch : schedules) {
    const SimResult r = simulate(inst, sch);
    if (r.feasible) best = std::min(best, r.makespan);
  }
  return best;
}

// In phases: the cheap bound, a quick local search against it, and only if that does not
// reach it the thorough bound and the full local search from its guide. offload-fast-pcie-4x8:
// the quick phase reaches the cheap bound, so the thorough one is never asked for.
// offload-slow-pcie-4x8: it is asked for once, and the guided start reaches it.
// The solver's root bound as build_warm_starts asks for it: the cheap bounds, or with the
// single-stage relaxation (within `relaxation_nodes` search nodes a stage, < 0: the default).
GuidedBound root_bound_for(const Instance& inst, double incumbent, bool relaxation, const std::atomic<bool>* stop,
                           std::int64_t relaxation_nodes = -1) {
  SolveOptions ro;
  ro.time_limit = 60;
  ro.stop = stop;
  ro.stage_relaxation = relaxation;
  ro.root_relaxation_nodes = relaxation_nodes;
  const RootBound r = root_lower_bound(inst, incumbent, ro);
  return GuidedBound{r.bound, r.device, r.order, r.relaxation_ran};
}

TEST(WarmStarts, PhasesAskForTheThoroughBoundOnlyWhenTheQuickSearchFallsShort) {
  SKIP_UNDER_SANITIZERS("it needs the root relaxation to finish within its wall-time budget (at most 2 s), which the sanitizers' slowdown exceeds");
  for (const char* name : {"offload-fast-pcie-4x8", "offload-slow-pcie-4x8"}) {
    SCOPED_TRACE(name);
    const Instance inst = load_instance(std::string(OPTPIPE_SOURCE_DIR) + "/instances/" + name + ".json");
    const BestResult heur = run_all_heuristics(inst);
    int cheap_calls = 0, thorough_calls = 0;
    const RootBoundFn bound = [&](double incumbent, bool thorough, const std::atomic<bool>* stop) {
      ++(thorough ? thorough_calls : cheap_calls);
      return root_bound_for(inst, incumbent, thorough, stop);
    };
    WarmStartOptions wo;
    wo.evaluations = 120000;
    wo.guide_name = "relaxed order";
    const BoundedWarmStarts b = build_warm_starts(inst, heur, wo, bound);
    EXPECT_TRUE(b.starts.reached_target);
    EXPECT_EQ(cheap_calls, 1);
    const bool slow = std::string(name) == "offload-slow-pcie-4x8";
    EXPECT_EQ(thorough_calls, slow ? 1 : 0);
    EXPECT_EQ(b.thorough, slow);
    EXPECT_NEAR(b.bound, slow ? 341.92 : 228.82, 1e-6);
    ASSERT_GE(static_cast<int>(b.starts.improved.size()), b.quick_runs);
    for (int k = 0; k < b.quick_runs; ++k) EXPECT_LE(b.starts.improved[static_cast<std::size_t>(k)].evaluations, 6000);
    const double best = best_feasible(inst, b.starts.schedules);
    EXPECT_NEAR(best, b.bound, 1e-6);  // a schedule meets it
    if (slow) {
      ASSERT_GT(static_cast<int>(b.starts.improved.size()), b.quick_runs);
      EXPECT_EQ(b.starts.improved[static_cast<std::size_t>(b.quick_runs)].heuristic, "zb-greedy + relaxed order");
    }
  }
}

// With two threads the thorough bound runs beside the full local search (heuristics/warm_starts.h).
// offload-fast-pcie-4x8 with a budget whose quick phase falls short (1000 simulations from
// pipe-offload reach 233.66): the thorough bound is asked for, but the search from pipe-offload
// meets the cheap bound (228.82, the optimum) after about 3700 simulations, and that stops the
// relaxation, which would take about 0.2 s to show nothing more. offload-slow-pcie-4x8: the
// relaxation's bound and its guided search still finish it.
TEST(WarmStarts, BesideTheBoundASearchThatMeetsTheCheapBoundStopsIt) {
  SKIP_UNDER_SANITIZERS("it compares how far two threads get, which the sanitizers' slowdown skews");
  if (tbb::this_task_arena::max_concurrency() < 2) GTEST_SKIP() << "one thread: the phases run one after the other";
  for (const char* name : {"offload-fast-pcie-4x8", "offload-slow-pcie-4x8"}) {
    SCOPED_TRACE(name);
    const bool slow = std::string(name) == "offload-slow-pcie-4x8";
    const Instance inst = load_instance(std::string(OPTPIPE_SOURCE_DIR) + "/instances/" + name + ".json");
    const BestResult heur = run_all_heuristics(inst);
    int thorough_calls = 0;
    bool stopped = false;
    double thorough_bound = 0;
    const RootBoundFn bound = [&](double incumbent, bool thorough, const std::atomic<bool>* stop) {
      SolveOptions ro;
      ro.time_limit = 60;
      ro.stage_relaxation = thorough;
      ro.stop = stop;
      const RootBound r = root_lower_bound(inst, incumbent, ro);
      if (thorough) {
        ++thorough_calls;
        stopped = stop->load();
        thorough_bound = r.bound;
      }
      return GuidedBound{r.bound, r.device, r.order};
    };
    WarmStartOptions wo;
    wo.evaluations = 20000;
    wo.guide_name = "relaxed order";
    const BoundedWarmStarts b = build_warm_starts(inst, heur, wo, bound);
    EXPECT_TRUE(b.starts.reached_target);
    EXPECT_TRUE(b.thorough);
    EXPECT_EQ(thorough_calls, 1);
    EXPECT_NEAR(b.bound, slow ? 341.92 : 228.82, 1e-6);
    const double best = best_feasible(inst, b.starts.schedules);
    EXPECT_NEAR(best, b.bound, 1e-6);
    if (slow) {
      EXPECT_NEAR(thorough_bound, 341.92, 1e-6);  // it ran to the end
      continue;
    }
    EXPECT_TRUE(stopped);  // the search met 228.82 first
    bool from_pipe_offload = false;
    for (std::size_t k = static_cast<std::size_t>(b.quick_runs); k < b.starts.improved.size(); ++k) {
      const ImprovedStart& r = b.starts.improved[k];
      from_pipe_offload = from_pipe_offload || (r.heuristic == "pipe-offload" && std::fabs(r.after - 228.82) < 1e-6);
    }
    EXPECT_TRUE(from_pipe_offload);
  }
}

// The brief bound (build_warm_starts' BriefBoundFn) is asked once, after the cheap one and
// before the quick phase, with the best heuristic's makespan as the cutoff; the quick searches
// then stop where they meet it, and the thorough bound is not needed. offload-random-10
// (tests/data/relaxation): the root's single-stage relaxation within 1000 nodes a stage shows
// the optimum, 51.18 ms, above the cheap bound; without the brief bound the quick search from
// the best heuristic runs past 51.18 to its whole budget against the cheap one.
TEST(WarmStarts, TheBriefBoundComesBeforeTheQuickPhaseAndEndsItsSearches) {
  SKIP_UNDER_SANITIZERS("the relaxation must finish within its wall-time budget, which the sanitizers' slowdown exceeds");
  const Instance inst = load_instance(std::string(OPTPIPE_SOURCE_DIR) + "/tests/data/relaxation/offload-random-10.json");
  const BestResult heur = run_all_heuristics(inst);
  ASSERT_NE(heur.best_result(), nullptr);
  std::vector<std::string> calls;
  const RootBoundFn bound = [&](double incumbent, bool thorough, const std::atomic<bool>* stop) {
    calls.push_back(thorough ? "thorough" : "cheap");
    return root_bound_for(inst, incumbent, thorough, stop);
  };
  double brief_cutoff = 0;
  const BriefBoundFn brief = [&](double incumbent, const std::atomic<bool>* stop) {
    calls.push_back("brief");
    brief_cutoff = incumbent;
    return root_bound_for(inst, incumbent, true, stop, 1000);
  };
  WarmStartOptions wo;
  wo.evaluations = 120000;
  wo.quick_evaluations = 6000;
  wo.quick_improve_best = 1;
  std::int64_t quick_without = 0;
  for (const bool with_brief : {false, true}) {
    SCOPED_TRACE(with_brief);
    calls.clear();
    const BoundedWarmStarts b = build_warm_starts(inst, heur, wo, bound, {}, with_brief ? brief : BriefBoundFn{});
    ASSERT_GE(b.quick_runs, 1);
    const ImprovedStart& q = b.starts.improved[0];
    EXPECT_EQ(q.heuristic, heur.best_result()->name);
    EXPECT_TRUE(b.starts.reached_target);
    EXPECT_NEAR(b.bound, 51.18, 1e-6);
    EXPECT_NEAR(best_feasible(inst, b.starts.schedules), 51.18, 1e-6);
    if (!with_brief) {
      quick_without = q.evaluations;
      EXPECT_EQ(calls, (std::vector<std::string>{"cheap", "thorough"}));
      continue;
    }
    EXPECT_EQ(calls, (std::vector<std::string>{"cheap", "brief"}));
    EXPECT_DOUBLE_EQ(brief_cutoff, heur.best_result()->sim.makespan);
    EXPECT_TRUE(b.relaxation);
    EXPECT_FALSE(b.thorough);
    EXPECT_NEAR(q.after, 51.18, 1e-6);
    EXPECT_LT(q.evaluations, quick_without);  // it stopped at the brief bound
  }
}

// The quick phase's starts (WarmStartOptions::quick_improve_best): by default the guide's hybrid
// and the three best heuristics; with 1, the guide's hybrid and the best heuristic only, in that
// order, each within the quick budget. seed-11 small-loop-03 of bench/solvers/random_small.py:
// the device relaxation's order is the guide, and no heuristic meets the cheap bound.
TEST(WarmStarts, TheQuickPhaseCanRunFromTheGuideAndTheBestHeuristicOnly) {
  const Instance inst = load_instance(std::string(OPTPIPE_SOURCE_DIR) + "/tests/data/relaxation/small-loop-03.json");
  const BestResult heur = run_all_heuristics(inst);
  ASSERT_NE(heur.best_result(), nullptr);
  const RootBoundFn bound = [&](double incumbent, bool thorough, const std::atomic<bool>* stop) {
    SolveOptions ro;
    ro.stop = stop;
    ro.stage_relaxation = thorough;
    const RootBound r = root_lower_bound(inst, incumbent, ro);
    return GuidedBound{r.bound, r.device, r.order};
  };
  // The heuristics' distinct makespans: the default quick phase has that many starts (up to 3).
  std::vector<double> distinct;
  for (const HeuristicResult& r : heur.results) {
    if (r.ok() && std::none_of(distinct.begin(), distinct.end(), [&](double m) { return std::fabs(m - r.sim.makespan) < 1e-9; })) {
      distinct.push_back(r.sim.makespan);
    }
  }
  ASSERT_GE(distinct.size(), 2u) << "the instance must have a second heuristic start to leave out";
  for (const int starts : {-1, 1}) {
    SCOPED_TRACE(starts);
    WarmStartOptions wo;
    wo.evaluations = 1500;
    wo.quick_evaluations = 1000;
    wo.quick_improve_best = starts;
    wo.guide_name = "relaxed order";
    const BoundedWarmStarts b = build_warm_starts(inst, heur, wo, bound);
    const int expected = 1 + (starts < 0 ? std::min<int>(3, static_cast<int>(distinct.size())) : 1);
    ASSERT_EQ(b.quick_runs, expected);
    const ImprovedStart& guided = b.starts.improved[0];
    EXPECT_TRUE(guided.heuristic.ends_with(" + relaxed order")) << guided.heuristic;
    EXPECT_EQ(b.starts.improved[1].heuristic, heur.best_result()->name);
    for (int k = 0; k < b.quick_runs; ++k) EXPECT_LE(b.starts.improved[static_cast<std::size_t>(k)].evaluations, 1000);
  }
}

// The quick phase's stall limit (WarmStartOptions::quick_stall_evaluations) ends its runs early
// and only them: offload-slow-pcie-4x8, whose cheap bound (318.63 ms) no schedule meets, so
// every quick run uses its whole budget without the limit.
TEST(WarmStarts, TheQuickPhasesStallLimitEndsOnlyItsRuns) {
  const Instance inst = load_instance(std::string(OPTPIPE_SOURCE_DIR) + "/instances/offload-slow-pcie-4x8.json");
  const BestResult heur = run_all_heuristics(inst);
  const RootBoundFn cheap_only = [&](double incumbent, bool, const std::atomic<bool>* stop) {
    SolveOptions ro;
    ro.stop = stop;
    ro.stage_relaxation = false;  // the thorough bound too: the phases do not end at a proof
    const RootBound r = root_lower_bound(inst, incumbent, ro);
    return GuidedBound{r.bound, r.device, r.order};
  };
  for (const std::int64_t stall : {0, 200}) {
    SCOPED_TRACE(stall);
    WarmStartOptions wo;
    wo.evaluations = 5000;
    wo.quick_evaluations = 3000;
    wo.quick_improve_best = 1;
    wo.quick_stall_evaluations = stall;
    const BoundedWarmStarts b = build_warm_starts(inst, heur, wo, cheap_only);
    ASSERT_EQ(b.quick_runs, 1);
    ASSERT_GT(b.starts.improved.size(), 1u);  // the full phase ran
    const ImprovedStart& q = b.starts.improved[0];
    if (stall == 0) {
      EXPECT_EQ(q.evaluations, 3000);
    } else {
      EXPECT_LT(q.evaluations, 3000);
      EXPECT_GE(q.evaluations, stall);
    }
    // The full phase's runs have no stall limit: each uses the rest of the budget.
    for (std::size_t k = 1; k < b.starts.improved.size(); ++k) {
      if (b.starts.improved[k].before > b.bound + 1e-6) EXPECT_EQ(b.starts.improved[k].evaluations, 2000) << b.starts.improved[k].heuristic;
    }
  }
}

TEST(WarmStarts, BudgetGrowsWithTheTimeLimitWithinItsRange) {
  EXPECT_EQ(local_search_budget(10), 20000);
  EXPECT_EQ(local_search_budget(0), 1000);
  EXPECT_EQ(local_search_budget(1e6), 200000);
  EXPECT_LT(local_search_budget(5), local_search_budget(30));
}

}  // namespace
}  // namespace optpipe
