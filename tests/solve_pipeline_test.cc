// The solve pipeline (solve/solve_pipeline.h) against the parts it sequences: the same optimum
// as the search given the same warm starts, its phases reported in order, an exact proven cache
// hit answered without a search, the caller's warm starts used, and the reporters' output.
#include <atomic>
#include <cstdio>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <tbb/task_arena.h>

#include "heuristics/registry.h"
#include "heuristics/warm_starts.h"
#include "model/error.h"
#include "model/instance_io.h"
#include "model/simulator.h"
#include "search/solver.h"
#include "solve/early_search.h"
#include "solve/json_reporter.h"
#include "solve/solve_pipeline.h"
#include "solve/text_reporter.h"
#include "tests/sanitized.h"
#include "tests/test_paths.h"
#include "tests/test_util.h"

namespace optpipe {
namespace {

Instance shipped(const std::string& name) {
  return load_instance(std::string(OPTPIPE_SOURCE_DIR) + "/instances/" + name + ".json");
}

using test_support::relaxation_data;

// Why the stall tests skip under the sanitizers: which phase finds what depends on the root
// relaxation finishing within its wall-time share and the local search's runs within the limit.
constexpr const char* kNeedsOptimisedTimings =
    "the phases' outcome depends on the root relaxation and the local search finishing within their wall-time shares";

// Records the order of the observer's calls.
struct Recorder : SolveObserver {
  std::vector<std::string> calls;
  void on_warning(const std::string&) override { calls.push_back("warning"); }
  void on_cache_lookup(const cache::LookupResult& hit, const std::string&) override {
    calls.push_back(std::string("cache ") + cache::to_string(hit.kind));
  }
  void on_warm_starts(const WarmStartReport& r) override {
    calls.push_back("warm starts");
    EXPECT_EQ(r.heuristics.results.size(), all_heuristics().size());
  }
  void on_root_bound(double) override { calls.push_back("root"); }
  void on_cache_store(cache::StoreOutcome o, const std::string&) override {
    calls.push_back(std::string("store ") + cache::to_string(o));
  }
};

PipelineOptions quick(double time_limit = 20) {
  PipelineOptions o;
  o.time_limit = time_limit;
  o.threads = 1;
  return o;
}

// The pipeline proves the same optimum as the search alone from every heuristic's schedule
// (no local search, no cache), on every small shipped instance.
TEST(SolvePipeline, SameOptimumAsTheSearchFromTheHeuristics) {
  for (const char* name : {"tiny-2x3", "uniform-4x8", "hetero-4x8", "v-4x8", "loop-4x8", "unsplit-4x8"}) {
    const Instance inst = shipped(name);
    const PipelineResult p = solve_pipeline(inst, quick());
    ASSERT_EQ(p.result.status, SolveResult::Status::kOptimal) << name;
    std::vector<Schedule> warm;
    for (const HeuristicResult& h : run_all_heuristics(inst).results) {
      if (h.ok()) warm.push_back(*h.schedule);
    }
    SolveOptions so;
    so.time_limit = 20;
    so.threads = 1;
    const SolveResult direct = solve(inst, warm, so);
    ASSERT_EQ(direct.status, SolveResult::Status::kOptimal) << name;
    EXPECT_NEAR(p.result.makespan, direct.makespan, 1e-9) << name;
    ASSERT_TRUE(p.result.schedule);
    EXPECT_NEAR(simulate(inst, *p.result.schedule).makespan, p.result.makespan, 1e-9) << name;
    EXPECT_FALSE(p.best_heuristic.empty()) << name;
    EXPECT_LE(p.result.makespan, p.best_heuristic_makespan + 1e-9) << name;
  }
}

// Tree search between the warm-start phases (issue 21): on small random no-offload instances
// of every placement, under tight and loose memory, the pipeline's status and optimum equal the
// search's alone from the heuristics' schedules, however it ended (the quick local search meeting
// the cheap bound, the short tree search, or the full path); and the tree is what ends some.
TEST(SolvePipeline, TreeSearchBetweenPhasesGivesTheSearchesOptimum) {
  std::mt19937 rng(2111);
  test_support::RandomInstanceOptions ro;
  ro.max_devices = 3;
  ro.max_microbatches = 5;
  ro.offloadable_probability = 0;
  int by_tree = 0, compared = 0;
  for (int i = 0; i < 60; ++i) {
    ro.tight_memory = i % 2 == 1;
    const Instance inst = test_support::random_instance(rng, ro);
    const PipelineResult p = solve_pipeline(inst, quick(10));
    std::vector<Schedule> warm;
    for (const HeuristicResult& h : run_all_heuristics(inst).results) {
      if (h.ok()) warm.push_back(*h.schedule);
    }
    SolveOptions so;
    so.time_limit = 10;
    so.threads = 1;
    const SolveResult direct = solve(inst, warm, so);
    ASSERT_EQ(p.result.status == SolveResult::Status::kInfeasible, direct.status == SolveResult::Status::kInfeasible) << i;
    if (direct.status != SolveResult::Status::kOptimal || p.result.status != SolveResult::Status::kOptimal) continue;
    ++compared;
    EXPECT_NEAR(p.result.makespan, direct.makespan, 1e-9) << i;
    ASSERT_TRUE(p.result.schedule);
    EXPECT_NEAR(simulate(inst, *p.result.schedule).makespan, p.result.makespan, 1e-9) << i;
    if (p.tree_first) ++by_tree;
  }
  std::printf("[ tree     ] %d of %d small random instances proven by the tree between the phases\n", by_tree,
              compared);
  EXPECT_GE(compared, 40);
  EXPECT_GE(by_tree, 1);
}

// With two threads, where the quick phase had the device relaxation's order as a guide, the
// tree first runs the local search from that guided start beside it (SolveOptions::beside):
// small-v-04 (bench/solvers/random_small.py, whose root bound is its optimum) is proven by the
// tree first with the beside's run recorded and reported; one thread has no beside.
TEST(SolvePipeline, TheTreeFirstRunsTheGuidedLocalSearchBesideIt) {
  const Instance inst = relaxation_data("small-v-04");
  PipelineOptions o = quick(10);
  o.threads = 2;
  std::ostringstream text;
  TextSolveReporter reporter(text, ReportOptions{});
  const PipelineResult p = solve_pipeline(inst, o, reporter);
  ASSERT_EQ(p.result.status, SolveResult::Status::kOptimal);
  EXPECT_NEAR(p.result.makespan, 33.23, 1e-6);
  ASSERT_TRUE(p.tree_first);
  EXPECT_GT(p.result.stats.beside_seconds, 0.0);
  const std::size_t line = text.str().find("beside it, a local search from ");
  ASSERT_NE(line, std::string::npos) << text.str();
  EXPECT_NE(text.str().find(" + relaxed order: ", line), std::string::npos) << text.str();
  std::printf("[ beside   ] small-v-04: %lld better schedule(s) from beside the tree in %.3f s\n",
              static_cast<long long>(p.result.stats.beside_improvements), p.result.stats.beside_seconds);

  const PipelineResult one = solve_pipeline(inst, quick(10));
  ASSERT_EQ(one.result.status, SolveResult::Status::kOptimal);
  EXPECT_NEAR(one.result.makespan, 33.23, 1e-6);
  EXPECT_EQ(one.result.stats.beside_seconds, 0.0);
}

// --two-devices N (PipelineOptions::two_device_nodes): probing starts from the two-device
// relaxations' bound, on seed-23 small-loop-01 of random_small.py its optimum (the root's
// bounds: 29.02), and the report says so; off by default.
TEST(SolvePipeline, WithTwoDevicesProbingStartsFromTheirBound) {
  const Instance inst = relaxation_data("seed23-small-loop-01");
  for (const std::int64_t nodes : {std::int64_t{0}, std::int64_t{200000}}) {
    PipelineOptions o = quick(10);
    o.two_device_nodes = nodes;
    std::ostringstream text;
    TextSolveReporter reporter(text, ReportOptions{});
    const PipelineResult p = solve_pipeline(inst, o, reporter);
    ASSERT_EQ(p.result.status, SolveResult::Status::kOptimal);
    EXPECT_NEAR(p.result.makespan, 30.02, 1e-6);
    ASSERT_TRUE(p.probing.has_value());
    const bool listed = text.str().find("two-device relaxations: ") != std::string::npos &&
                        text.str().find("best 30.020 (devices 2 and 3)") != std::string::npos;
    if (nodes == 0) {
      EXPECT_EQ(p.probing->two_device.pairs, 0);
      EXPECT_NEAR(p.probing->start, 29.02, 1e-6);
      EXPECT_FALSE(listed) << text.str();
    } else {
      EXPECT_NEAR(p.probing->two_device.bound, 30.02, 1e-6);
      EXPECT_NEAR(p.probing->start, 30.02, 1e-6);
      EXPECT_EQ(p.probing->steps.size(), 1u);
      EXPECT_TRUE(listed) << text.str();
    }
  }
}

// Where the tree first stops at its limit without a proof, the search after the local search goes
// on from its open nodes (TreeSearch::resume) instead of starting again at the root: seed-11
// small-loop-03 (bench/solvers/random_small.py --seed 11; the whole solve takes about 20 s to
// prove it) with 1.5 s on one thread, where the tree first gets 0.3 s. (small-v-02 was the
// instance here until the device relaxation's cheaper nodes let the tree first prove it in
// 0.25 s, then seed-7 small-v-06 until forward waits that never end were cut where the F is
// listed, which left it 0.4 s of tree.) Not with offload: there the nodes also ask the
// single-stage relaxations, which the tree first leaves out.
TEST(SolvePipeline, TheSearchGoesOnFromTheTreeFirstsOpenNodes) {
  const Instance inst = relaxation_data("small-loop-03");
  const PipelineResult p = solve_pipeline(inst, quick(1.5));
  EXPECT_FALSE(p.tree_first);
  EXPECT_TRUE(p.tree_resumed);
  ASSERT_TRUE(p.result.schedule);
  EXPECT_NEAR(simulate(inst, *p.result.schedule).makespan, p.result.makespan, 1e-9);
  EXPECT_GE(p.result.makespan, 42.30 - 1e-6);  // the optimum
  EXPECT_LE(p.result.makespan, p.best_heuristic_makespan + 1e-9);
  EXPECT_LE(p.result.bound, 42.30 + 1e-6);
  if (p.result.status == SolveResult::Status::kOptimal) EXPECT_NEAR(p.result.makespan, 42.30, 1e-6);

  const PipelineResult offload = solve_pipeline(shipped("offload-slow-pcie-4x8"), quick(10));
  EXPECT_FALSE(offload.tree_resumed);
}

// Offload instances get a short tree first (1000 nodes): offload-slow-pcie-4x8 is not proven by
// it (the relaxation proves it), offload-random-16 (bench/solvers/random_offload.py), whose best
// heuristic is optimal above the root's cheap bounds, is.
TEST(SolvePipeline, AShortTreeFirstWithOffload) {
  SKIP_UNDER_SANITIZERS("it needs the root relaxation to finish within its wall-time budget (at most 2 s), which the sanitizers' slowdown exceeds");
  struct Seen : SolveObserver {
    const SolveResult* tree = nullptr;
    std::int64_t nodes = -1;
    void on_warm_starts(const WarmStartReport& r) override {
      tree = r.tree_first;
      if (tree) nodes = tree->stats.nodes;
    }
  } slow, random16;
  const PipelineResult p = solve_pipeline(shipped("offload-slow-pcie-4x8"), quick(10), slow);
  EXPECT_EQ(p.result.status, SolveResult::Status::kOptimal);
  ASSERT_TRUE(slow.tree);
  EXPECT_GT(slow.nodes, 0);
  EXPECT_LE(slow.nodes, 1000);
  EXPECT_FALSE(p.tree_first);

  const Instance inst = relaxation_data("offload-random-16");
  ASSERT_TRUE(inst.can_offload());
  const PipelineResult q = solve_pipeline(inst, quick(10), random16);
  ASSERT_EQ(q.result.status, SolveResult::Status::kOptimal);
  EXPECT_NEAR(q.result.makespan, 39.30, 1e-6);
  EXPECT_TRUE(q.tree_first);
  EXPECT_LE(random16.nodes, 1000);
}

// Past 256 compute ops the tree does not run between the phases.
TEST(SolvePipeline, NoTreeFirstOnLargerInstances) {
  const Instance inst = shipped("gpt-8x24-tight");  // 8 stages x 24 microbatches x 3 ops
  struct Seen : SolveObserver {
    bool tree = false, reported = false;
    void on_warm_starts(const WarmStartReport& r) override {
      reported = true;
      tree = r.tree_first != nullptr;
    }
  } seen;
  PipelineOptions o = quick(2);
  o.local_search = 0;
  const PipelineResult p = solve_pipeline(inst, o, seen);
  EXPECT_TRUE(seen.reported);
  EXPECT_FALSE(seen.tree);
  EXPECT_FALSE(p.tree_first);
}

// From 257 to 2047 compute ops, under a time limit with two threads, the local search in rounds
// runs beside the tree (SolveOptions::beside): never worse than the best heuristic; not with one
// thread, nor with a node limit (then the tree has both threads and the result the same on both
// thread counts).
TEST(SolvePipeline, MidSizeRunsTheRoundsBesideTheTree) {
  const Instance inst = shipped("gpt-8x24-tight");  // 576 compute ops
  PipelineOptions two = quick(3);
  two.threads = 2;
  const PipelineResult p = solve_pipeline(inst, two);
  ASSERT_TRUE(p.result.schedule);
  EXPECT_GT(p.result.stats.beside_seconds, 0.0);
  EXPECT_LE(p.result.makespan, p.best_heuristic_makespan + 1e-9);
  EXPECT_NEAR(simulate(inst, *p.result.schedule).makespan, p.result.makespan, 1e-9);
  std::printf("[ beside   ] gpt-8x24-tight, 3 s: %lld better schedule(s) from the rounds beside the tree, %.2f ms\n",
              static_cast<long long>(p.result.stats.beside_improvements), p.result.makespan);

  const PipelineResult one = solve_pipeline(inst, quick(3));
  EXPECT_EQ(one.result.stats.beside_seconds, 0.0);

  PipelineOptions nodes = quick(60);
  nodes.node_limit = 200;
  nodes.local_search = 500;
  const PipelineResult n1 = solve_pipeline(inst, nodes);
  nodes.threads = 2;
  const PipelineResult n2 = solve_pipeline(inst, nodes);
  EXPECT_EQ(n2.result.stats.beside_seconds, 0.0);
  EXPECT_NEAR(n1.result.makespan, n2.result.makespan, 1e-9);
}

// At scale (PipelineOptions::scale_ops) no node is expanded; the local search runs in rounds,
// is never worse than the heuristics, and on a fixed budget gives the same schedule with 1 and 2
// threads.
TEST(SolvePipeline, AtScaleRoundsInsteadOfTheTreeTheSameWithOneAndTwoThreads) {
  const Instance inst = shipped("gpt-8x24-tight");  // 576 compute ops
  std::vector<double> makespans;
  for (int threads : {1, 2}) {
    PipelineOptions o = quick(600);  // the budget, not the clock, ends it
    o.scale_ops = 500;
    o.local_search = 300;
    o.threads = threads;
    struct Seen : SolveObserver {
      bool rounds = false;
      void on_warm_starts(const WarmStartReport& r) override {
        for (const ImprovedStart& i : r.starts.starts.improved) rounds = rounds || i.heuristic.find("rounds") != std::string::npos;
      }
    } seen;
    const PipelineResult p = solve_pipeline(inst, o, seen);
    EXPECT_TRUE(seen.rounds);
    EXPECT_EQ(p.result.stats.nodes, 0);
    EXPECT_EQ(p.result.status, SolveResult::Status::kFeasible);
    EXPECT_NE(p.result.reason.find("no tree search"), std::string::npos) << p.result.reason;
    EXPECT_LE(p.result.makespan, p.best_heuristic_makespan + 1e-9);
    makespans.push_back(p.result.makespan);
  }
  EXPECT_EQ(makespans[0], makespans[1]);
}

// On small instances the quick phase runs from the best heuristic (and the relaxation's guided
// start, when there is one) only, with offload too: offload-slow-pcie-4x8 has three feasible
// heuristics above its cheap bound and no guide, so one quick run, from the best of them. With
// a fixed budget (--local-search N) the three best heuristics as before.
TEST(SolvePipeline, SmallInstancesQuickPhaseRunsFromTheBestHeuristic) {
  const Instance inst = shipped("offload-slow-pcie-4x8");
  for (bool fixed : {false, true}) {
    SCOPED_TRACE(fixed);
    PipelineOptions o = quick(1);
    o.threads = 2;
    if (fixed) o.local_search = 1000;
    struct Seen : SolveObserver {
      int quick_runs = -1;
      std::string first, best;
      void on_warm_starts(const WarmStartReport& r) override {
        quick_runs = r.starts.quick_runs;
        if (!r.starts.starts.improved.empty()) first = r.starts.starts.improved.front().heuristic;
        if (const HeuristicResult* b = r.heuristics.best_result()) best = b->name;
      }
    } seen;
    const PipelineResult p = solve_pipeline(inst, o, seen);
    EXPECT_LE(p.result.makespan, p.best_heuristic_makespan + 1e-9);
    EXPECT_EQ(seen.quick_runs, fixed ? 3 : 1);
    EXPECT_EQ(seen.first, seen.best);
  }
}

// On small instances the full local search's runs stop 1500 simulations after their last new
// best (kSmallFullStall in solve_pipeline.cc), unless the caller fixed the budget
// (--local-search N). offload-random-34 of `bench/solvers/random_offload.py --seed 8`: the best
// heuristic's 33.21 ms is the optimum and the root's bounds are below it, so every full run
// used its whole budget (114,000 simulations at the default limit, 2 s) before the tree proved
// it in a few hundred nodes.
TEST(SolvePipeline, SmallInstancesFullLocalSearchStopsAtAStall) {
  SKIP_UNDER_SANITIZERS(kNeedsOptimisedTimings);
  const Instance inst = relaxation_data("offload-random-s8-34");
  for (const bool fixed : {false, true}) {
    SCOPED_TRACE(fixed ? "--local-search 4000" : "the default budget");
    PipelineOptions o = quick(60);
    if (fixed) o.local_search = 4000;
    struct Seen : SolveObserver {
      std::vector<ImprovedStart> full;
      std::int64_t quick = 0;  // the quick phase's simulations a start (the full phase has the rest)
      double bound = 0;
      void on_warm_starts(const WarmStartReport& r) override {
        const auto& all = r.starts.starts.improved;
        const std::size_t q = std::min<std::size_t>(r.starts.quick_runs, all.size());
        for (std::size_t k = 0; k < q; ++k) quick = std::max(quick, all[k].evaluations);
        full.assign(all.begin() + static_cast<std::ptrdiff_t>(q), all.end());
        bound = r.starts.bound;
      }
    } seen;
    const PipelineResult p = solve_pipeline(inst, o, seen);
    ASSERT_EQ(p.result.status, SolveResult::Status::kOptimal);
    EXPECT_NEAR(p.result.makespan, 33.21, 1e-6);
    ASSERT_GE(seen.full.size(), 3u);  // the full phase ran, from several starts
    const std::int64_t budget = fixed ? 4000 : local_search_budget(60);
    int stalled = 0;
    for (const ImprovedStart& run : seen.full) {
      SCOPED_TRACE(run.heuristic);
      if (run.after <= seen.bound + 1e-6) continue;  // (met the bound: stopped there)
      EXPECT_LE(run.evaluations, budget);
      if (fixed) {
        EXPECT_EQ(run.evaluations + seen.quick, budget);  // the whole rest of its budget
      } else {
        EXPECT_GE(run.evaluations, 1500);
        EXPECT_LT(run.evaluations, 10000);
        ++stalled;
      }
    }
    if (!fixed) EXPECT_GE(stalled, 3);
  }
}

// ... and so does the local search from the tree first's best (polish_tree_best):
// offload-random-12 of `random_offload.py --seed 8`, whose glimpse of the tree finds 48.03 ms,
// which no local search improves (the optimum, 46.56, comes from the relaxation's guided start).
TEST(SolvePipeline, SmallInstancesLocalSearchFromTheTreesBestStopsAtAStall) {
  SKIP_UNDER_SANITIZERS(kNeedsOptimisedTimings);
  const Instance inst = relaxation_data("offload-random-s8-12");
  for (const bool fixed : {false, true}) {
    SCOPED_TRACE(fixed ? "--local-search 4000" : "the default budget");
    PipelineOptions o = quick(10);
    if (fixed) o.local_search = 4000;
    struct Seen : SolveObserver {
      std::optional<ImprovedStart> polish;
      void on_warm_starts(const WarmStartReport& r) override {
        if (r.tree_polish) polish = *r.tree_polish;
      }
    } seen;
    const PipelineResult p = solve_pipeline(inst, o, seen);
    ASSERT_EQ(p.result.status, SolveResult::Status::kOptimal);
    EXPECT_NEAR(p.result.makespan, 46.56, 1e-6);
    ASSERT_TRUE(seen.polish.has_value());
    ASSERT_GE(seen.polish->after, seen.polish->before - 1e-9);  // (nothing better from there)
    if (fixed) {
      EXPECT_EQ(seen.polish->evaluations, 4000);
    } else {
      EXPECT_GE(seen.polish->evaluations, 1500);
      EXPECT_LT(seen.polish->evaluations, local_search_budget(10) / 2);
    }
  }
}

// The time quantum (model/time_quantum.h): seed-13 small-loop-04 of bench/solvers/random_small.py
// gives its times in hundredths of a millisecond, so no schedule lies strictly between 36.18 and
// its optimum 36.19 ms, and every node whose bound passes 36.185 is cut. Probing's last target
// proves it in well under the nodes it takes with every bound as computed (one thread: 20k
// against 45k), with the same optimum.
TEST(SolvePipeline, TheTimeQuantumCutsNodesWithinAQuantumOfTheIncumbent) {
  const Instance inst = relaxation_data("seed13-small-loop-04");
  std::int64_t nodes[2] = {0, 0};
  for (const bool rounded : {true, false}) {
    PipelineOptions o = quick(30);
    o.quantum = rounded ? -1 : 0;
    const PipelineResult p = solve_pipeline(inst, o);
    ASSERT_EQ(p.result.status, SolveResult::Status::kOptimal) << rounded;
    EXPECT_NEAR(p.result.makespan, 36.19, 1e-6) << rounded;
    ASSERT_TRUE(p.probing.has_value());
    EXPECT_TRUE(p.probing->proven) << rounded;
    nodes[rounded ? 0 : 1] = p.probing->nodes;
    EXPECT_EQ(p.result.stats.time_quantum, rounded ? 0.01 : 0.0);
  }
  std::printf("[ quantum  ] seed-13 small-loop-04 proven by probing in %lld nodes with the quantum, %lld without\n",
              static_cast<long long>(nodes[0]), static_cast<long long>(nodes[1]));
  EXPECT_LT(nodes[0], nodes[1] * 2 / 3);
}

// At scale under a time limit there is no quick phase: the improved starts are the rounds' (and
// the search beside the slow heuristics'), none a quick search from a heuristic's schedule.
// With a fixed budget (--local-search N) the quick phase stays.
TEST(SolvePipeline, AtScaleUnderATimeLimitTheRoundsStartAtOnce) {
  const Instance inst = shipped("gpt-8x24-tight");  // 576 compute ops
  for (bool timed : {true, false}) {
    PipelineOptions o = quick(2);
    o.scale_ops = 500;
    o.threads = 2;
    if (!timed) o.local_search = 300;
    struct Seen : SolveObserver {
      int quick_runs = -1, rounds = 0, others = 0;
      void on_warm_starts(const WarmStartReport& r) override {
        quick_runs = r.starts.quick_runs;
        for (const ImprovedStart& i : r.starts.starts.improved) {
          if (i.heuristic.find("rounds") != std::string::npos) {
            ++rounds;
          } else if (i.heuristic.find("beside the slow heuristics") == std::string::npos) {
            ++others;
          }
        }
      }
    } seen;
    const PipelineResult p = solve_pipeline(inst, o, seen);
    EXPECT_LE(p.result.makespan, p.best_heuristic_makespan + 1e-9);
    EXPECT_GT(seen.rounds, 0) << timed;
    if (timed) {
      EXPECT_EQ(seen.others, 0);
    } else {
      EXPECT_GT(seen.others, 0);  // the quick phase's runs, one per start
    }
  }
}

// `threads` holds for every phase, not only the tree: the observer, called from the pipeline's
// phases, sees an arena of that many threads (so --threads 1 is one thread, and its warm starts
// run their phases in turn: heuristics/warm_starts.h).
TEST(SolvePipeline, EveryPhaseRunsWithinItsThreads) {
  const Instance inst = shipped("offload-fast-pcie-4x8");
  for (int threads : {1, 2}) {
    if (threads > static_cast<int>(std::thread::hardware_concurrency())) continue;
    PipelineOptions o = quick(10);
    o.threads = threads;
    struct Seen : SolveObserver {
      int concurrency = 0;
      void on_warm_starts(const WarmStartReport&) override { concurrency = tbb::this_task_arena::max_concurrency(); }
    } seen;
    const PipelineResult p = solve_pipeline(inst, o, seen);
    EXPECT_EQ(seen.concurrency, threads);
    EXPECT_EQ(p.result.status, SolveResult::Status::kOptimal);
    EXPECT_NEAR(p.result.makespan, 228.82, 1e-6);
  }
}

// Cache lookup, warm starts, root, store, in that order; a second solve of the same instance is
// answered from the cache (exact hit, proven optimal) with no search and no warm starts.
TEST(SolvePipeline, ReportsPhasesInOrderAndAnswersAnExactProvenHitFromTheCache) {
  const Instance inst = shipped("uniform-4x8");
  PipelineOptions o = quick();
  o.cache_file = test_support::temp_file("pipeline", "cache.sqlite");
  o.build = "test";
  Recorder first;
  const PipelineResult a = solve_pipeline(inst, o, first);
  ASSERT_EQ(a.result.status, SolveResult::Status::kOptimal);
  EXPECT_FALSE(a.from_cache);
  const std::vector<std::string> expected{"cache miss", "warm starts", "root", "store stored"};
  EXPECT_EQ(first.calls, expected);

  Recorder second;
  const PipelineResult b = solve_pipeline(inst, o, second);
  EXPECT_TRUE(b.from_cache);
  EXPECT_EQ(b.result.status, SolveResult::Status::kOptimal);
  EXPECT_EQ(b.result.stats.nodes, 0);
  EXPECT_NEAR(b.result.makespan, a.result.makespan, 1e-9);
  EXPECT_FALSE(b.cache_key.empty());
  // Where the schedule came from says so (frontier's "schedule" column, JSON's best_from).
  EXPECT_NE(a.best_from(), "cache");
  EXPECT_EQ(b.best_from(), "cache");
  ASSERT_EQ(second.calls.size(), 1u);
  EXPECT_EQ(second.calls[0], "cache exact");
}

// A warm start from the caller (here the optimum, with no local search and one node) is the
// incumbent the search starts from.
TEST(SolvePipeline, UsesTheCallersWarmStarts) {
  const Instance inst = shipped("v-4x8");
  const PipelineResult opt = solve_pipeline(inst, quick());
  ASSERT_EQ(opt.result.status, SolveResult::Status::kOptimal);
  PipelineOptions o = quick();
  o.local_search = 0;
  o.node_limit = 1;
  Schedule given = *opt.result.schedule;
  given.solver = "the caller's";
  o.warm_starts = {given};
  const PipelineResult r = solve_pipeline(inst, o);
  ASSERT_TRUE(r.result.schedule);
  EXPECT_NEAR(r.result.makespan, opt.result.makespan, 1e-9);
  EXPECT_EQ(r.result.warm_start, "the caller's");
}

// --bounds gpu: without a GPU the pipeline refuses before any phase runs; with one (run by
// scripts/gpu_check.sh) the tree searches with its node bounds in batches on the GPU, and what it
// ends with brackets the optimum the CPU bounds prove (v-4x8: 1.7k nodes depth-first; in batches
// the search takes about 175k, so 3000 nodes here).
TEST(SolvePipeline, GpuBoundsBracketTheCpuOptimumOrAreRefusedBeforeAnyWork) {
  const Instance inst = shipped("v-4x8");
  PipelineOptions o = quick(60);
  o.local_search = 0;
  o.stage_relaxation = false;
  o.bounds = BoundsMode::kGpu;
  o.node_limit = 3000;
  Recorder rec;
  std::optional<PipelineResult> gpu;
  try {
    gpu = solve_pipeline(inst, o, rec);
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--bounds gpu:"), std::string::npos) << e.what();
    EXPECT_TRUE(rec.calls.empty());
    return;
  }
  o.bounds = BoundsMode::kCpu;
  o.node_limit = -1;
  const PipelineResult cpu = solve_pipeline(inst, o);
  ASSERT_EQ(cpu.result.status, SolveResult::Status::kOptimal);
  ASSERT_TRUE(gpu->result.schedule);
  EXPECT_GT(gpu->result.stats.nodes, 0);
  EXPECT_LE(gpu->result.bound, cpu.result.makespan + 1e-6);
  EXPECT_GE(gpu->result.makespan, cpu.result.makespan - 1e-6);
  EXPECT_NEAR(simulate(inst, *gpu->result.schedule).makespan, gpu->result.makespan, 1e-6);
}

// A stop requested before the solve: every phase ends at once and the best schedule found so far
// is still the result (the heuristics' fallback gives one at least).
TEST(SolvePipeline, AStopRequestEndsEveryPhaseWithASchedule) {
  std::atomic<bool> stop{true};
  PipelineOptions o = quick(60);
  o.stop = &stop;
  const Instance inst = shipped("gpt-8x24-tight");
  const PipelineResult r = solve_pipeline(inst, o);
  ASSERT_TRUE(r.result.schedule);
  EXPECT_EQ(r.result.status, SolveResult::Status::kFeasible);
  EXPECT_NE(r.result.reason.find("interrupted"), std::string::npos) << r.result.reason;
  EXPECT_EQ(r.result.stats.nodes, 0);
  EXPECT_TRUE(simulate(inst, *r.result.schedule).feasible);
}

// The warm starts' local searches stop on the request too.
TEST(SolvePipeline, AStopRequestStopsTheLocalSearch) {
  const Instance inst = shipped("gpt-8x24-tight");
  const BestResult heur = run_all_heuristics(inst);
  std::atomic<bool> stop{true};
  WarmStartOptions wo;
  wo.evaluations = 100000;
  wo.stop = &stop;
  const WarmStarts w = build_warm_starts(inst, heur, wo);
  ASSERT_FALSE(w.improved.empty());
  for (const ImprovedStart& i : w.improved) EXPECT_LT(i.evaluations, 1000) << i.heuristic;
}

// The reporters: the text summary's status and makespan lines, and a JSON 'done' object whose
// 'stats' has every counter of the statistics table with the search's values.
TEST(SolvePipeline, ReportersPrintTheResult) {
  const Instance inst = shipped("tiny-2x3");
  std::ostringstream text, json;
  TextSolveReporter tr(text, ReportOptions{false, true});
  JsonSolveReporter jr(json, ReportOptions{true, false});
  const PipelineResult r = solve_pipeline(inst, quick(), tr);
  ASSERT_TRUE(r.result.schedule);
  const SimResult sim = simulate(inst, *r.result.schedule);
  tr.done(inst, r, sim, WrittenFiles{"out.json", ""});
  jr.done(inst, r, sim, WrittenFiles{});
  const std::string t = text.str();
  EXPECT_NE(t.find("warm starts:"), std::string::npos) << t;
  EXPECT_NE(t.find("status optimal (proven optimal)"), std::string::npos) << t;
  EXPECT_NE(t.find("nodes by depth"), std::string::npos) << t;  // verbose
  EXPECT_NE(t.find("wrote out.json"), std::string::npos) << t;
  const nlohmann::json done = nlohmann::json::parse(json.str());
  EXPECT_EQ(done["event"], "done");
  EXPECT_EQ(done["status"], "optimal");
  EXPECT_NEAR(done["makespan"].get<double>(), r.result.makespan, 1e-9);
  int counters = 0;
  r.result.stats.for_each_counter([&](const char* name, std::int64_t value, const char*) {
    ++counters;
    ASSERT_TRUE(done["stats"].contains(name)) << name;
    EXPECT_EQ(done["stats"][name].get<std::int64_t>(), value) << name;
  });
  EXPECT_EQ(static_cast<int>(done["stats"].size()), counters);
}

}  // namespace
}  // namespace optpipe

namespace optpipe {
namespace {

// The local search beside the slow heuristics (solve/early_search.h) names the schedule it
// improved and that schedule's own makespan: on GPT-3 14.6B 16 x 64 at 2 activations it starts
// from ZB greedy (4223 ms, done in milliseconds) while AdaOffload takes seconds, and the periodic
// heuristic's 1492.70 ms arrives meanwhile; the log once read "1492.699 -> 4220.175 ms".
TEST(EarlySearch, SaysWhichScheduleItImprovedAndFromWhat) {
  SKIP_UNDER_SANITIZERS("the search's work depends on how long the heuristics take");
  const Instance inst =
      load_instance(std::string(OPTPIPE_SOURCE_DIR) + "/instances/generated/bench-gpt3-14.6b-16x64-2act.json");
  const EarlySearch early = run_heuristics_beside_search(inst, {}, RunLimits::within(60), 0);
  ASSERT_TRUE(early.improved.has_value()) << "the search beside AdaOffload's seconds improved nothing";
  EXPECT_LT(early.after, early.before);
  bool found = false;
  for (const HeuristicResult& h : early.heuristics.results) {
    if (h.ok() && h.schedule->solver == early.from) {
      found = true;
      EXPECT_NEAR(h.sim.makespan, early.before, 1e-9) << early.from;
    }
  }
  EXPECT_TRUE(found) << "no heuristic's schedule is called " << early.from;
  EXPECT_NEAR(Simulator(inst).run(*early.improved).makespan, early.after, 1e-6);
}

}  // namespace
}  // namespace optpipe
