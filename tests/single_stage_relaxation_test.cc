// bounds/single_stage_relaxation.h: the single-stage relaxation is a lower bound (never
// above a proven optimum or a feasible schedule's makespan), its pruned search finds what the
// plain enumeration of the same model finds, it applies only where its model holds, on
// offload-slow-pcie-4x8 it lifts the root bound from 318.63 to about 334.3 ms, and at the nodes
// (from each stage's history, memoised) it proves an instance the other bounds leave open. The
// first stage under the spec's start rules (StartRules::kSpecFirstStage) is checked the same
// ways, plus along good schedules of offload-slow's cousins and against the brute-force oracle.
// The sweeps along those schedules run as ranges of their instances (tests/case_range.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "bounds/bound_problem.h"
#include "bounds/heads.h"
#include "bounds/node_times.h"
#include "bounds/node_transfers.h"
#include "bounds/single_stage_relaxation.h"
#include "model/instance_io.h"
#include "model/schedule_io.h"
#include "search/solver.h"
#include "heuristics/registry.h"
#include "model/simulator.h"
#include "model/validator.h"
#include "tests/brute_force.h"
#include "tests/case_range.h"
#include "tests/root_heads.h"
#include "tests/test_paths.h"
#include "tests/test_util.h"

namespace optpipe {
namespace {

namespace fs = std::filesystem;
constexpr std::int64_t kNodes = 2'000'000;

Instance shipped(const std::string& name) {
  return load_instance((fs::path(OPTPIPE_SOURCE_DIR) / "instances" / (name + ".json")).string());
}

using test_support::root_heads;

SingleStageRelaxation relax(const Instance& inst, int s, double cutoff = std::numeric_limits<double>::infinity(),
                            std::int64_t nodes = kNodes, bool prune = true, bool pairs = true) {
  const BoundProblem p(inst);
  return single_stage_relaxation(inst, p, s, root_heads(inst, p), cutoff, nodes, 0, prune, StartRules::kFree, pairs);
}

// Plain pipelines (one stage per device) with offloadable stages under tight memory, levels 0
// and 1, split backward: where the relaxation applies.
Instance random_plain_offload(std::mt19937& rng, int max_microbatches) {
  test_support::RandomInstanceOptions o;
  o.min_devices = 2;
  o.max_devices = 3;
  o.min_microbatches = 2;
  o.max_microbatches = max_microbatches;
  o.offloadable_probability = 1.0;
  o.split_probability = 1.0;
  o.allow_multi_stage = false;
  o.tight_memory = true;
  Instance inst = test_support::random_instance(rng, o);
  inst.offload_levels = {0.0, 1.0};
  return inst;
}

TEST(SingleStageRelaxation, LiftsTheRootBoundOfOffloadSlow) {
  const Instance inst = shipped("offload-slow-pcie-4x8");
  const SingleStageRelaxation alone = relax(inst, 0, std::numeric_limits<double>::infinity(), kNodes, true, false);
  const SingleStageRelaxation r = relax(inst, 0);
  ASSERT_TRUE(alone.finished && r.finished) << alone.nodes << " and " << r.nodes << " nodes";
  ASSERT_TRUE(r.applicable);
  EXPECT_TRUE(alone.exact && r.exact);  // no cutoff: their optima were found
  std::printf("[ relax    ] offload-slow-pcie-4x8, stage 0: %.4f ms in %lld nodes; without the pair releases %.4f ms "
              "in %lld nodes\n",
              r.bound, static_cast<long long>(r.nodes), alone.bound, static_cast<long long>(alone.nodes));
  // The cheap bounds give 318.63 at the root. Each B with its own chain: 334.58, CP-SAT's
  // optimum for the same model (bench/solvers/single_stage.py), and zb-greedy's makespan on this
  // stage alone. With the pair releases: 338.82, CP-SAT's optimum of the free-timing model of
  // the whole instance (bench/README.md).
  EXPECT_NEAR(alone.bound, 334.58, 1e-6);
  EXPECT_NEAR(r.bound, 338.82, 1e-6);
  // The solver takes the first stage under the spec's start rules into its root bound: with the
  // pair releases it is the optimum, 341.92, so the witness is proven optimal at the root.
  const SingleStageRelaxation spec = single_stage_relaxation(inst, BoundProblem(inst), 0, root_heads(inst, BoundProblem(inst)),
                                                             std::numeric_limits<double>::infinity(), kNodes, 0, true,
                                                             StartRules::kSpecFirstStage);
  ASSERT_TRUE(spec.finished);
  EXPECT_NEAR(spec.bound, 341.92, 1e-6);
  SolveOptions opt;
  opt.threads = 1;
  opt.node_limit = 1;
  const SolveResult s = solve(inst, {test_support::offload_slow_witness(inst)}, opt);
  EXPECT_NEAR(s.root_bound, 341.92, 1e-6);
  EXPECT_NEAR(s.stats.single_stage_bound, s.root_bound, 1e-9);
  EXPECT_EQ(s.status, SolveResult::Status::kOptimal) << s.reason;
  EXPECT_EQ(s.stats.nodes, 0);
  EXPECT_GT(s.stats.single_stage_nodes, 0);
  // Without the pairs the root stays at 334.58 and one node proves nothing.
  opt.pair_releases = false;
  const SolveResult without = solve(inst, {test_support::offload_slow_witness(inst)}, opt);
  EXPECT_NEAR(without.root_bound, 334.58, 1e-6);
  EXPECT_EQ(without.status, SolveResult::Status::kFeasible);
}

TEST(SingleStageRelaxation, WithoutOffloadItIsTheSolversOptimumOfTheStageAlone) {
  // Stage 0 of offload-slow-pcie-4x8 alone (what bench/solvers/single_stage.py writes), without
  // its offload fields: the solver proves 334.58, and the relaxation loses nothing there.
  Instance inst = shipped("offload-slow-pcie-4x8");
  inst.comm = {9.17, 9.17, 9.17};  // keeps the 55.02 ms from F(0, j)'s end to B(0, j)'s start
  for (int s = 1; s < inst.num_stages(); ++s) {
    Stage& st = inst.stages[s];
    st.forward = st.backward = st.weight = 0;
    st.activation = st.weight_activation = 0;
    st.offload.reset();
    st.reload.reset();
    inst.devices[s].memory_limit = 1e15;
  }
  inst.stages[0].offload.reset();
  inst.stages[0].reload.reset();
  const SolveResult exact = solve(inst);
  ASSERT_EQ(exact.status, SolveResult::Status::kOptimal) << exact.reason;
  const SingleStageRelaxation r = relax(inst, 0);
  ASSERT_TRUE(r.finished);
  EXPECT_NEAR(r.bound, exact.makespan, 1e-6);
  EXPECT_NEAR(exact.makespan, 334.58, 1e-6);
}

TEST(SingleStageRelaxation, NeverAboveTheOptimumOrAnySchedule) {
  std::mt19937 rng(31);
  int proven = 0, stages = 0, equal = 0, schedules = 0;
  for (int i = 0; i < 40; ++i) {
    const Instance inst = random_plain_offload(rng, 5);
    SolveOptions opt;
    opt.threads = 1;
    opt.node_limit = 200'000;
    opt.time_limit = 5;
    const SolveResult exact = solve(inst, {}, opt);
    if (exact.status == SolveResult::Status::kInfeasible) continue;
    // Random feasible schedules: the bound holds for every one.
    std::vector<double> makespans;
    for (int k = 0; k < 30; ++k) {
      const SimResult sim = simulate(inst, test_support::random_valid_schedule(inst, rng, 0.4));
      if (sim.feasible) makespans.push_back(sim.makespan);
    }
    schedules += static_cast<int>(makespans.size());
    const bool optimal = exact.status == SolveResult::Status::kOptimal;
    proven += optimal ? 1 : 0;
    for (int s = 0; s < inst.num_stages(); ++s) {
      const SingleStageRelaxation r = relax(inst, s);
      if (!r.applicable || !r.finished) continue;
      ++stages;
      SCOPED_TRACE("instance " + std::to_string(i) + ", stage " + std::to_string(s));
      if (exact.schedule) EXPECT_LE(r.bound, exact.makespan + 1e-6);
      if (optimal) equal += r.bound >= exact.makespan - 1e-6 ? 1 : 0;
      for (double ms : makespans) EXPECT_LE(r.bound, ms + 1e-6);
    }
  }
  std::printf("[ relax    ] %d stages bounded, %d instances proven (the bound equals the optimum on %d stages), "
              "%d random schedules\n",
              stages, proven, equal, schedules);
  EXPECT_GT(stages, 40);
  EXPECT_GT(proven, 20);
  EXPECT_GT(schedules, 200);
}

// Stage 0 of offload-random-02 alone (bench/solvers/random_offload.py, single_stage.py) and a
// schedule of it found by the solver: its forward F0.4 waits for memory until the offload of
// microbatch 3 ends, which lets the reload of microbatch 2 start early. A relaxation that
// started every forward as early as memory allows would claim 55.12 ms, above this schedule.
TEST(SingleStageRelaxation, AForwardThatWaitsForAnOffloadMakesRoomForAReload) {
  const fs::path dir = fs::path(OPTPIPE_SOURCE_DIR) / "tests" / "data" / "relaxation";
  const Instance inst = load_instance((dir / "offload-random-02-stage0.json").string());
  const Schedule sch = load_schedule((dir / "offload-random-02-stage0-schedule.json").string());
  const SimResult sim = simulate(inst, sch);
  ASSERT_TRUE(sim.feasible) << sim.reason;
  EXPECT_NEAR(sim.makespan, 54.26, 1e-6);
  const SingleStageRelaxation r = relax(inst, 0);
  ASSERT_TRUE(r.finished);
  EXPECT_LE(r.bound, sim.makespan + 1e-6);
  EXPECT_GE(r.bound, 54.0);  // the solver's own bound stays near 54 after 10 s
}

TEST(SingleStageRelaxation, PrunedSearchFindsWhatThePlainEnumerationFinds) {
  std::mt19937 rng(77);
  int compared = 0;
  for (int i = 0; i < 60 && compared < 40; ++i) {
    const Instance inst = random_plain_offload(rng, 3);
    for (int s = 0; s < inst.num_stages(); ++s) {
      const SingleStageRelaxation plain = relax(inst, s, std::numeric_limits<double>::infinity(), 3'000'000, false);
      if (!plain.applicable || !plain.finished) continue;
      const SingleStageRelaxation pruned = relax(inst, s);
      ASSERT_TRUE(pruned.finished);
      EXPECT_NEAR(pruned.bound, plain.bound, 1e-6) << "instance " << i << ", stage " << s;
      EXPECT_LE(pruned.nodes, plain.nodes);
      ++compared;
    }
  }
  EXPECT_GE(compared, 20);
}

// A floor (a bound known elsewhere) stops the search at its first relaxed schedule at or below
// it: then it claims nothing (bound 0, below_floor; its order is that schedule's) and takes no
// more nodes than the search without it; a floor under the relaxed optimum changes nothing. Random plain pipelines, each
// stage at floors below, at and above its relaxed optimum.
TEST(SingleStageRelaxation, AFloorStopsItAtTheFirstScheduleBelowAndChangesNothingElse) {
  std::mt19937 rng(78);
  int below = 0, above = 0;
  for (int i = 0; i < 40; ++i) {
    const Instance inst = random_plain_offload(rng, 4);
    const BoundProblem p(inst);
    const std::vector<double> head = root_heads(inst, p);
    const double inf = std::numeric_limits<double>::infinity();
    for (int s = 0; s < inst.num_stages(); ++s) {
      const SingleStageRelaxation plain = single_stage_relaxation(inst, p, s, head, inf, kNodes);
      if (!plain.applicable || !plain.finished || !plain.exact) continue;
      for (const double floor : {plain.bound - 1.0, plain.bound + 1e-6, plain.bound + 5.0}) {
        const SingleStageRelaxation r =
            single_stage_relaxation(inst, p, s, head, inf, kNodes, 0, true, StartRules::kFree, true, floor);
        ASSERT_TRUE(r.finished);
        EXPECT_LE(r.nodes, plain.nodes);
        if (floor < plain.bound) {
          EXPECT_FALSE(r.below_floor) << "instance " << i << ", stage " << s;
          EXPECT_NEAR(r.bound, plain.bound, 1e-9);
          EXPECT_EQ(r.nodes, plain.nodes);
          ++above;
        } else {
          EXPECT_TRUE(r.below_floor) << "instance " << i << ", stage " << s;
          EXPECT_EQ(r.bound, 0.0);
          EXPECT_FALSE(r.exact);
          // The schedule it stopped at, a guide: every compute op of the stage once (reloads
          // as its offloads ask).
          auto computes = [](const std::vector<Action>& order) {
            return std::count_if(order.begin(), order.end(), [](const Action& a) { return a.is_compute(); });
          };
          EXPECT_EQ(computes(r.order), computes(plain.order));
          EXPECT_GT(computes(r.order), 0);
          ++below;
        }
      }
    }
  }
  EXPECT_GE(above, 20);
  EXPECT_GE(below, 40);
}

// The search's own bound counts memory: a forward waits until the earlier microbatches can have
// released room for its activation, and of the microbatches not yet started at most as many can
// be offloaded by an instant as the D2H channel can finish by then, one after another. On
// offload-slow-pcie-4x8's stage 1 (room for two of its activations, offloads of 29 ms) memory
// took the search from 58.9k nodes to 20.0k, the channel to 8.2k, the slot energy (below) to 190,
// to the same value (the plain enumeration tests check that it never cuts the optimum).
TEST(SingleStageRelaxation, ItsSearchBoundCountsMemoryAndTheOffloadChannel) {
  const Instance inst = shipped("offload-slow-pcie-4x8");
  const SingleStageRelaxation r = relax(inst, 1, 343.70);
  ASSERT_TRUE(r.finished && r.exact);
  EXPECT_NEAR(r.bound, 288.68, 1e-6);
  EXPECT_LE(r.nodes, 300);
}

// A stop flag that is set stops the search unfinished (it claims nothing), as a node limit does.
TEST(SingleStageRelaxation, AStopFlagStopsItUnfinished) {
  const Instance inst = shipped("offload-slow-pcie-4x8");
  const BoundProblem p(inst);
  const std::atomic<bool> stop{true};
  const SingleStageRelaxation r =
      single_stage_relaxation(inst, p, 0, root_heads(inst, p), std::numeric_limits<double>::infinity(), kNodes, 0, true,
                              StartRules::kSpecFirstStage, true, -std::numeric_limits<double>::infinity(), &stop);
  EXPECT_FALSE(r.finished);
  EXPECT_EQ(r.bound, 0.0);
  EXPECT_LE(r.nodes, 1024);  // polled every 1024 nodes
}

using test_support::along_path;

// The relaxation of a node whose state is `st` at decision time `t`: the largest over stages.
// `history`, if given: the largest history-only value.
double relax_node(const Instance& inst, const BoundProblem& p, const Simulator::Snapshot& st, double t, bool* any,
                  double* history = nullptr) {
  NodeTimes times;
  NodeTransfers transfers;
  fill_node_times(p, st, t, times);
  fill_node_transfers(p, st, t, transfers);
  std::vector<double> head, finish;
  compute_heads(p, times, head, finish, &transfers);
  double best = 0;
  *any = false;
  for (int s = 0; s < p.S; ++s) {
    const SingleStageRelaxation r = single_stage_relaxation_at_node(
        inst, p, s, times, transfers, head, std::numeric_limits<double>::infinity(), kNodes);
    if (!r.finished) continue;
    *any = true;
    best = std::max(best, r.bound);
    // From the stage's history alone (what the search's nodes use): the same model with fewer
    // constraints, so never more.
    const SingleStageRelaxation h = single_stage_relaxation_of_history(
        inst, p, s, times, transfers, std::numeric_limits<double>::infinity(), kNodes);
    if (h.finished) EXPECT_LE(h.bound, r.bound + 1e-6) << "stage " << s;
    if (h.finished && history) *history = std::max(*history, h.bound);
  }
  return best;
}

// At a node the started ops stay where they are; every node on a schedule's path has that
// schedule as a completion, so the relaxation never exceeds its makespan (nor does the
// history-only one, which is never above it). On offload-slow's witness it reaches the
// makespan at decision 45 of 101 (t = 133 ms), where the search's node bound does at decision 78
// (bench/bound_trace --relaxation), and from decision 15 on it is 338.82, CP-SAT's value for the
// same stage and prefix (bench/solvers/relaxation_trace.py): the two reloads that the first
// offloads call for must share the H2D channel (334.32 without that, the reloads overlapping).
TEST(SingleStageRelaxation, AtANodeNeverAboveACompletionAndTightEarlyOnTheWitness) {
  const Instance slow = shipped("offload-slow-pcie-4x8");
  const BoundProblem ps(slow);
  const Schedule witness = test_support::offload_slow_witness(slow);
  const double makespan = simulate(slow, witness).makespan;
  int tight_from = -1;
  along_path(slow, witness, [&](const Simulator::Snapshot& st, double t, int depth) {
    if (depth % 3 != 0) return;
    bool any = false;
    double history = 0;
    const double r = relax_node(slow, ps, st, t, &any, &history);
    ASSERT_TRUE(any) << "depth " << depth;
    if (depth == 15) {
      EXPECT_NEAR(r, 338.82, 1e-6);
      EXPECT_NEAR(history, 338.82, 1e-6);
    }
    EXPECT_LE(r, makespan + 1e-6) << "depth " << depth;
    if (tight_from < 0 && r >= makespan - 1e-6) tight_from = depth;
  });
  std::printf("[ relax    ] offload-slow witness: the relaxation reaches %.2f at decision %d\n", makespan, tight_from);
  EXPECT_GE(tight_from, 0);
  EXPECT_LE(tight_from, 50);
  // Random feasible schedules of random plain pipelines: never above their makespans.
  std::mt19937 rng(5);
  int nodes = 0;
  for (int i = 0; i < 30; ++i) {
    const Instance inst = random_plain_offload(rng, 4);
    const BoundProblem p(inst);
    const Schedule sch = test_support::random_valid_schedule(inst, rng, 0.5);
    const SimResult sim = simulate(inst, sch);
    if (!sim.feasible) continue;
    along_path(inst, sch, [&](const Simulator::Snapshot& st, double t, int) {
      bool any = false;
      const double r = relax_node(inst, p, st, t, &any);
      if (!any) return;
      ++nodes;
      EXPECT_LE(r, sim.makespan + 1e-6) << "instance " << i;
    });
  }
  std::printf("[ relax    ] %d nodes along random feasible schedules\n", nodes);
  EXPECT_GT(nodes, 200);
}

// What the solver's node memo rests on (single_stage_node_params): with the node key fixed, the
// relaxation never falls when the params rise. Nodes along random feasible schedules, each
// against itself with later device and channel free times, a later makespan so far and later
// heads for a random subset of the ops not started.
TEST(SingleStageRelaxation, NeverFallsWhenTheNodeParamsRise) {
  std::mt19937 rng(17);
  int compared = 0, rose = 0;
  for (int i = 0; i < 40; ++i) {
    const Instance inst = random_plain_offload(rng, 5);
    const BoundProblem p(inst);
    const Schedule sch = test_support::random_valid_schedule(inst, rng, 0.5);
    if (!simulate(inst, sch).feasible) continue;
    along_path(inst, sch, [&](const Simulator::Snapshot& st, double t, int depth) {
      if (depth % 2 != 0) return;
      NodeTimes times;
      NodeTransfers transfers;
      fill_node_times(p, st, t, times);
      fill_node_transfers(p, st, t, transfers);
      std::vector<double> head, finish;
      compute_heads(p, times, head, finish, &transfers);
      const double inf = std::numeric_limits<double>::infinity();
      for (int s = 0; s < p.S; ++s) {
        const SingleStageRelaxation low =
            single_stage_relaxation_at_node(inst, p, s, times, transfers, head, inf, kNodes);
        if (!low.finished) continue;
        NodeTimes t2 = times;
        NodeTransfers n2 = transfers;
        std::vector<double> h2 = head;
        std::uniform_real_distribution<double> up(0.0, 3.0);
        std::bernoulli_distribution coin(0.5);
        const int d = p.device_of[s], g = p.group_of_device[d];
        if (coin(rng)) t2.device_free[d] += up(rng);
        if (coin(rng)) t2.makespan_so_far += up(rng);
        if (coin(rng)) n2.d2h_free[g] += up(rng);
        if (coin(rng)) n2.h2d_free[g] += up(rng);
        for (std::size_t o = 0; o < h2.size(); ++o) {
          if (!(times.end[o] == times.end[o]) && h2[o] == h2[o] && coin(rng)) h2[o] += up(rng);
        }
        ASSERT_EQ(single_stage_node_key(inst, p, s, times, transfers), single_stage_node_key(inst, p, s, t2, n2));
        const std::vector<double> a = single_stage_node_params(inst, p, s, times, transfers, head);
        const std::vector<double> b = single_stage_node_params(inst, p, s, t2, n2, h2);
        ASSERT_EQ(a.size(), b.size());
        for (std::size_t k = 0; k < a.size(); ++k) ASSERT_LE(a[k], b[k]);
        const SingleStageRelaxation high = single_stage_relaxation_at_node(inst, p, s, t2, n2, h2, inf, kNodes);
        if (!high.finished) continue;
        ++compared;
        rose += high.bound > low.bound + 1e-6 ? 1 : 0;
        EXPECT_GE(high.bound, low.bound - 1e-6) << "instance " << i << ", depth " << depth << ", stage " << s;
      }
    });
  }
  std::printf("[ relax    ] %d node pairs compared, the relaxation rose on %d\n", compared, rose);
  EXPECT_GT(compared, 200);
  EXPECT_GT(rose, 20);  // the params matter
}

using test_support::relaxation_data;

// One thread, at most `node_limit` nodes.
SolveOptions one_thread(std::int64_t node_limit) {
  SolveOptions opt;
  opt.threads = 1;
  opt.node_limit = node_limit;
  return opt;
}

// Solves from the best heuristic's schedule and prints what the relaxation did, labelled.
SolveResult solve_printed(const char* name, const Instance& inst, const SolveOptions& opt) {
  const BestResult heur = run_all_heuristics(inst);
  if (heur.best_result() == nullptr) return {};
  const SolveResult r = solve(inst, {*heur.best_result()->schedule}, opt);
  std::printf("[ relax    ] %s: %s %.3f, bound %.3f, %lld nodes; %lld relaxation calls, %lld memo hits, "
              "%lld children cut; with the node's heads %lld calls, %lld memo answers\n",
              name, to_string(r.status), r.makespan, r.bound, static_cast<long long>(r.stats.nodes),
              static_cast<long long>(r.stats.relaxation_calls), static_cast<long long>(r.stats.relaxation_hits),
              static_cast<long long>(r.stats.pruned_relaxation), static_cast<long long>(r.stats.node_relaxation_calls),
              static_cast<long long>(r.stats.node_relaxation_hits));
  return r;
}

// At the root: offload-random-13 (bench/solvers/random_offload.py, seed 7), which the other
// bounds leave open, has a stage whose relaxation equals the optimum, 50.65 ms (also CP-SAT's
// relaxed optimum: bench/results/solvers-offload-random-2026-11-22.md). A relaxation value
// that meets the incumbent proves it (within the solver's 1e-6 ms relaxation tolerance), so no
// node is searched.
TEST(SingleStageRelaxation, AtTheRootItProvesWhatTheOtherBoundsLeaveOpen) {
  const Instance inst = relaxation_data("offload-random-13");
  SolveOptions opt = one_thread(150'000);
  const SolveResult with = solve_printed("offload-random-13", inst, opt);
  EXPECT_EQ(with.status, SolveResult::Status::kOptimal) << with.reason;
  EXPECT_NEAR(with.makespan, 50.65, 1e-6);
  EXPECT_GE(with.root_bound, 50.65 - 1e-6);
  EXPECT_EQ(with.stats.nodes, 0);
  opt.stage_relaxation = false;
  const SolveResult without = solve_printed("without the relaxation", inst, opt);
  EXPECT_EQ(without.status, SolveResult::Status::kFeasible) << "proven without it in " << without.stats.nodes;
  EXPECT_LT(without.bound, 50.65 - 1e-3);
  EXPECT_EQ(without.stats.relaxation_calls, 0);
}

// At the nodes (SolveOptions::stage_relaxation): offload-random-23 of seed 5 (30.33 ms; root
// relaxation 30.32) is proven when each child also takes its stages' relaxations (from their
// histories, and deeper with the node's own heads, answered mostly by the memo), and not
// without them within the same node limit. (offload-random-02 of seed 8 was this test's
// instance until the last tails, bounds/last_tails.h, made its root relaxation its optimum.)
TEST(SingleStageRelaxation, AtTheNodesItProvesWhatTheOtherBoundsLeaveOpen) {
  const Instance inst = relaxation_data("offload-random-s5-23");
  SolveOptions opt = one_thread(150'000);
  const SolveResult with = solve_printed("offload-random-s5-23", inst, opt);
  EXPECT_EQ(with.status, SolveResult::Status::kOptimal) << with.reason;
  EXPECT_NEAR(with.makespan, 30.33, 1e-6);
  EXPECT_LT(with.root_bound, 30.33 - 1e-3);
  EXPECT_GT(with.stats.relaxation_calls, 0);
  EXPECT_GT(with.stats.relaxation_hits, with.stats.relaxation_calls);  // the memo answers most
  EXPECT_GT(with.stats.pruned_relaxation, 0);
  EXPECT_GT(with.stats.node_relaxation_calls, 0);
  EXPECT_GT(with.stats.node_relaxation_hits, with.stats.node_relaxation_calls);
  opt.stage_relaxation = false;
  const SolveResult without = solve_printed("without the relaxation", inst, opt);
  EXPECT_EQ(without.status, SolveResult::Status::kFeasible) << "proven without it in " << without.stats.nodes;
  EXPECT_EQ(without.stats.relaxation_calls, 0);
  EXPECT_EQ(without.stats.node_relaxation_calls, 0);
}

// The relaxation with the node's own heads from an eighth of the decisions on
// (node_expansion.cc): offload-random-15 of `random_offload.py --seed 8` (root bound 46.41 ms)
// is proven optimal at 46.80 from its optimum in a few thousand nodes. From a quarter on it
// took 51.5k: 46k nodes at depths 10-19 of 72 that the relaxation with their heads cuts.
TEST(SingleStageRelaxation, WithTheNodesHeadsFromAnEighthOfTheDecisions) {
  const Instance inst = relaxation_data("offload-random-s8-15");
  const Schedule optimum = load_schedule(
      (fs::path(OPTPIPE_SOURCE_DIR) / "tests" / "data" / "relaxation" / "offload-random-s8-15-optimum.json").string());
  const SolveResult r = solve(inst, {optimum}, one_thread(20'000));
  std::printf("[ relax    ] offload-random-s8-15 from its optimum: %s, %lld nodes, %lld calls with the node's heads\n",
              to_string(r.status), static_cast<long long>(r.stats.nodes),
              static_cast<long long>(r.stats.node_relaxation_calls));
  EXPECT_EQ(r.status, SolveResult::Status::kOptimal) << r.reason;
  EXPECT_NEAR(r.makespan, 46.80, 1e-6);
  EXPECT_LT(r.root_bound, 46.80 - 0.1);
  EXPECT_LE(r.stats.nodes, 10'000);
  EXPECT_GT(r.stats.node_relaxation_calls, 0);
}

// ---- The first stage under the spec's start rules (StartRules::kSpecFirstStage) ---------------

constexpr StartRules kSpec = StartRules::kSpecFirstStage;

SingleStageRelaxation relax_spec(const Instance& inst, bool prune = true, std::int64_t nodes = kNodes) {
  const BoundProblem p(inst);
  return single_stage_relaxation(inst, p, 0, root_heads(inst, p), std::numeric_limits<double>::infinity(), nodes, 0,
                                 prune, kSpec);
}

// Stage 0's history-only relaxation at a node (what the solver uses), under `rules`.
SingleStageRelaxation history_at(const Instance& inst, const BoundProblem& p, const Simulator::Snapshot& st, double t,
                                 StartRules rules = kSpec, bool pairs = false) {
  NodeTimes times;
  NodeTransfers transfers;
  fill_node_times(p, st, t, times);
  fill_node_transfers(p, st, t, transfers);
  return single_stage_relaxation_of_history(inst, p, 0, times, transfers, std::numeric_limits<double>::infinity(),
                                            kNodes, rules, pairs);
}

// Cousins of offload-slow-pcie-4x8, where the spec's rules bite: 3 or 4 devices (or as asked),
// 5 to 8 microbatches (or as asked), room for two activations, offloads three times as long as a
// forward, every time jittered by up to 50%.
Instance offload_slow_like(std::mt19937& rng, int min_devices = 3, int max_devices = 4, int min_microbatches = 5,
                           int max_microbatches = 8) {
  Instance inst = shipped("offload-slow-pcie-4x8");
  std::uniform_int_distribution<int> devices(min_devices, max_devices),
      microbatches(min_microbatches, max_microbatches);
  std::uniform_real_distribution<double> jitter(0.5, 1.5);
  const int d = devices(rng);
  inst.devices.resize(static_cast<std::size_t>(d));
  inst.stages.resize(static_cast<std::size_t>(d));
  inst.microbatches = microbatches(rng);
  for (Stage& st : inst.stages) {
    st.forward *= jitter(rng);
    st.backward *= jitter(rng);
    st.weight *= jitter(rng);
    st.offload = *st.offload * jitter(rng);
    st.reload = *st.reload * jitter(rng);
  }
  inst.name = "offload-slow-like";
  return inst;
}

// Random plain pipelines and small cousins of offload-slow (where the spec's rules change the
// value): the same optimum with and without the bound and the dominance test.
TEST(SingleStageSpecRules, PrunedSearchFindsWhatThePlainEnumerationFinds) {
  std::mt19937 rng(78);
  int compared = 0, above_free = 0;
  for (int i = 0; i < 240 && compared < 120; ++i) {
    const Instance inst = i % 4 == 0 ? random_plain_offload(rng, 3) : offload_slow_like(rng, 4, 4, 4, 4);
    const SingleStageRelaxation plain = relax_spec(inst, false, 3'000'000);
    if (!plain.applicable || !plain.finished) continue;
    const SingleStageRelaxation pruned = relax_spec(inst);
    ASSERT_TRUE(pruned.finished);
    EXPECT_NEAR(pruned.bound, plain.bound, 1e-6) << "instance " << i;
    EXPECT_LE(pruned.nodes, plain.nodes);
    const SingleStageRelaxation free = relax(inst, 0, std::numeric_limits<double>::infinity(), 3'000'000, false);
    if (free.finished) above_free += plain.bound > free.bound + 1e-6 ? 1 : 0;
    ++compared;
  }
  std::printf("[ spec     ] %d first stages compared (above the free model on %d)\n", compared, above_free);
  EXPECT_GE(compared, 60);
  EXPECT_GE(above_free, 3);  // the rules' own branches (held blocks, forced reloads) were searched
}

// The search's slot energy (single_stage_relaxation.h): where only k < m activations fit, each
// counts as 1/k of the memory, an M_W as what the other items leave, and every microbatch holds
// its activation at least its F, its round trip (or its offload and reload) and its B. It cuts
// the optimum nowhere: on cousins of offload-slow-pcie-4x8 (room for about two activations) every
// stage, free model and the first under the spec's rules, is the plain enumeration's value.
TEST(SingleStageRelaxation, TheSlotEnergyKeepsThePlainEnumerationsOptimum) {
  std::mt19937 rng(91);
  int compared = 0, slotted = 0;
  for (int i = 0; i < 60 && compared < 60; ++i) {
    const Instance inst = offload_slow_like(rng, 3, 3, 4, 5);
    const BoundProblem p(inst);
    for (int s = 0; s < inst.num_stages(); ++s) {
      for (const StartRules rules : {StartRules::kFree, kSpec}) {
        if (!single_stage_relaxation_applies(inst, p, s, rules)) continue;
        const auto run = [&](bool prune) {
          return single_stage_relaxation(inst, p, s, root_heads(inst, p), std::numeric_limits<double>::infinity(),
                                         prune ? kNodes : 3'000'000, 0, prune, rules);
        };
        const SingleStageRelaxation plain = run(false);
        if (!plain.finished) continue;
        const SingleStageRelaxation pruned = run(true);
        ASSERT_TRUE(pruned.finished);
        EXPECT_NEAR(pruned.bound, plain.bound, 1e-6) << "instance " << i << ", stage " << s;
        ++compared;
        const double cap = p.room[s] + p.activation[s];
        if (std::floor(cap / p.activation[s]) < inst.microbatches) ++slotted;
      }
    }
  }
  EXPECT_GE(compared, 40);
  EXPECT_GE(slotted, 40);
}

// On offload-slow-pcie-4x8's first stage (room for two activations of 1.4 GiB, M_W 1.3 GiB: two
// activations or one and two M_W's) the slot energy raises the search's bound at the root from
// 229.06 to 323.13 ms (the relaxed optimum, under the spec's rules, is 341.92) and takes the
// search from 153,728 nodes to 21,686 (80,331 without the M_W's held beside one activation,
// 40,652 without the B's order in the holds of the placed microbatches), stage 1's from 8,198
// to 190.
TEST(SingleStageRelaxation, TheSlotEnergyCutsOffloadSlowsFirstStageSevenfold) {
  const Instance inst = shipped("offload-slow-pcie-4x8");
  const BoundProblem p(inst);
  const SingleStageRelaxation r =
      single_stage_relaxation(inst, p, 0, root_heads(inst, p), 343.70, kNodes, 0, true, kSpec);
  ASSERT_TRUE(r.finished && r.exact);
  EXPECT_NEAR(r.bound, 341.92, 1e-6);
  EXPECT_LE(r.nodes, 25000);
}

// The spec's rules only add constraints to the free model, so the value never falls below the
// free one; it is a lower bound all the same: never above the optimum (proven by the solver
// without any single-stage relaxation, so that the check does not lean on what it checks) nor
// above a random schedule's makespan. (With the root's heads the two models agree on these
// instances; the rules bite along the paths, as the next tests show.)
TEST(SingleStageSpecRules, NeverBelowTheFreeModelNorAboveTheOptimumOrAnySchedule) {
  std::mt19937 rng(32);
  int bounded = 0, proven = 0, above_free = 0, schedules = 0;
  for (int i = 0; i < 40; ++i) {
    const Instance inst = random_plain_offload(rng, 5);
    const SingleStageRelaxation spec = relax_spec(inst);
    const SingleStageRelaxation free = relax(inst, 0);
    if (!spec.applicable || !spec.finished) continue;
    ++bounded;
    SCOPED_TRACE("instance " + std::to_string(i));
    if (free.finished) {
      EXPECT_GE(spec.bound, free.bound - 1e-6);
      above_free += spec.bound > free.bound + 1e-6 ? 1 : 0;
    }
    SolveOptions opt;
    opt.threads = 1;
    opt.node_limit = 200'000;
    opt.time_limit = 5;
    opt.stage_relaxation = false;
    const SolveResult exact = solve(inst, {}, opt);
    if (exact.status == SolveResult::Status::kOptimal) {
      ++proven;
      EXPECT_LE(spec.bound, exact.makespan + 1e-6);
    }
    for (int k = 0; k < 30; ++k) {
      const SimResult sim = simulate(inst, test_support::random_valid_schedule(inst, rng, 0.4));
      if (!sim.feasible) continue;
      ++schedules;
      EXPECT_LE(spec.bound, sim.makespan + 1e-6);
    }
  }
  std::printf("[ spec     ] %d first stages bounded (above the free model on %d), %d proven optima, %d schedules\n",
              bounded, above_free, proven, schedules);
  EXPECT_GT(bounded, 20);
  EXPECT_GT(proven, 10);
  EXPECT_GT(schedules, 200);
}

using Relax = std::function<SingleStageRelaxation(const Instance&, const BoundProblem&, const Simulator::Snapshot&, double)>;
struct AlongPaths {
  int nodes = 0, optimal_paths = 0, above = 0;
};

// Along the paths of the instances in `range` (every third a cousin from `cousin`, the others
// random plain offload pipelines, all drawn from `rng`): the solver's best schedule (without any
// single-stage relaxation, so that the check does not lean on what it checks) and three random
// ones. At every `stride`-th node `stronger` is never above the schedule's makespan and never
// below `weaker`; `above` counts the nodes where it is above.
AlongPaths check_along_paths(std::mt19937& rng, const test_support::CaseRange& range,
                             const std::function<Instance(std::mt19937&)>& cousin, int stride, const Relax& stronger,
                             const Relax& weaker) {
  AlongPaths n;
  for (int i = 0; i < range.end; ++i) {
    const bool like = i % 3 == 2;
    const Instance inst = like ? cousin(rng) : random_plain_offload(rng, 4);
    // The random schedules, drawn before the solve (which draws nothing).
    std::vector<Schedule> random;
    for (int k = 0; k < 3; ++k) random.push_back(test_support::random_valid_schedule(inst, rng, 0.5));
    if (!range.contains(i)) continue;  // drawn only to keep the engine in step
    const BoundProblem p(inst);
    std::vector<Schedule> paths;
    SolveOptions opt = one_thread(like ? 20'000 : 100'000);
    opt.time_limit = 5;
    opt.stage_relaxation = false;
    const SolveResult exact = solve(inst, {}, opt);
    if (exact.schedule) paths.push_back(*exact.schedule);  // the cousins' best within the limit
    n.optimal_paths += exact.status == SolveResult::Status::kOptimal ? 1 : 0;
    for (Schedule& sch : random) paths.push_back(std::move(sch));
    for (const Schedule& sch : paths) {
      const SimResult sim = simulate(inst, sch);
      if (!sim.feasible) continue;
      along_path(inst, sch, [&](const Simulator::Snapshot& st, double t, int depth) {
        if (depth % stride != 0) return;
        const SingleStageRelaxation h = stronger(inst, p, st, t);
        if (!h.finished) return;
        ++n.nodes;
        EXPECT_LE(h.bound, sim.makespan + 1e-6) << "instance " << i << ", depth " << depth;
        const SingleStageRelaxation w = weaker(inst, p, st, t);
        if (w.finished) {
          EXPECT_GE(h.bound, w.bound - 1e-6) << "instance " << i << ", depth " << depth;
          n.above += h.bound > w.bound + 1e-6 ? 1 : 0;
        }
      });
    }
  }
  return n;
}

// Every node on a schedule's path has the schedule as a completion, so the history-only value
// never exceeds its makespan. Checked along optimal schedules (the solver's, proven without any
// single-stage relaxation), where a bound that cuts too much would show first, and along random
// ones (the next test). On offload-slow's witness it reaches 341.92 at decision 15 (the free
// model: 338.82, CP-SAT's optimum of the free model of the whole instance), because the free
// model may hold a first-stage forward back after a W to let a reload take the memory first,
// which the spec's list scheduling cannot do (bench/README.md).
TEST(SingleStageSpecRules, AlongTheWitnessNeverAboveItsMakespan) {
  const Instance slow = shipped("offload-slow-pcie-4x8");
  const BoundProblem ps(slow);
  const Schedule witness = test_support::offload_slow_witness(slow);
  const double makespan = simulate(slow, witness).makespan;
  along_path(slow, witness, [&](const Simulator::Snapshot& st, double t, int depth) {
    if (depth % 5 != 0) return;
    const SingleStageRelaxation h = history_at(slow, ps, st, t);
    ASSERT_TRUE(h.finished) << "depth " << depth;
    EXPECT_LE(h.bound, makespan + 1e-6) << "depth " << depth;
    if (depth == 15) EXPECT_NEAR(h.bound, 341.92, 1e-6);
  });
}

// The same along the schedules of 60 instances (check_along_paths), in ranges of them.
using SpecRulesAlongSchedules = test_support::CaseRangeTest;

TEST_P(SpecRulesAlongSchedules, NeverAboveTheirMakespan) {
  const test_support::CaseRange range = GetParam();
  std::mt19937 rng(6);
  const AlongPaths n = check_along_paths(
      rng, range, [](std::mt19937& r) { return offload_slow_like(r); }, 1,
      [](const Instance& inst, const BoundProblem& p, const Simulator::Snapshot& st, double t) {
        return history_at(inst, p, st, t);
      },
      [](const Instance& inst, const BoundProblem& p, const Simulator::Snapshot& st, double t) {
        return history_at(inst, p, st, t, StartRules::kFree);
      });
  std::printf("[ spec     ] %d nodes along %d optimal, some good and some random schedules (above the free model "
              "at %d)\n",
              n.nodes, n.optimal_paths, n.above);
  EXPECT_GT(n.optimal_paths, range.share(20));
  EXPECT_GT(n.nodes, range.share(1000));
  EXPECT_GT(n.above, range.share(20));  // the rules matter
}
INSTANTIATE_TEST_SUITE_P(Seed6, SpecRulesAlongSchedules, testing::ValuesIn(test_support::case_ranges(60, 2)),
                         test_support::case_range_name);

// The same with the pair releases (pair_releases.h), which the solver uses at the root: never
// above a schedule's makespan along its path, never below the value without them, and above it
// often (the next test). On the witness they give the optimum from the root on.
TEST(SingleStageSpecRules, WithPairReleasesAlongTheWitnessNodesAllReachTheOptimum) {
  const Instance slow = shipped("offload-slow-pcie-4x8");
  const BoundProblem ps(slow);
  const Schedule witness = test_support::offload_slow_witness(slow);
  along_path(slow, witness, [&](const Simulator::Snapshot& st, double t, int depth) {
    if (depth % 10 != 0) return;
    const SingleStageRelaxation h = history_at(slow, ps, st, t, kSpec, true);
    ASSERT_TRUE(h.finished) << "depth " << depth;
    EXPECT_NEAR(h.bound, 341.92, 1e-6) << "depth " << depth;
  });
}

// Along the schedules of 36 instances (check_along_paths), in ranges of them.
using SpecRulesWithPairReleasesAlongSchedules = test_support::CaseRangeTest;

TEST_P(SpecRulesWithPairReleasesAlongSchedules, NeverAboveTheirMakespan) {
  const test_support::CaseRange range = GetParam();
  std::mt19937 rng(61);
  const AlongPaths n = check_along_paths(
      rng, range, [](std::mt19937& r) { return offload_slow_like(r, 3, 4, 4, 6); }, 2,
      [](const Instance& inst, const BoundProblem& p, const Simulator::Snapshot& st, double t) {
        return history_at(inst, p, st, t, kSpec, true);
      },
      [](const Instance& inst, const BoundProblem& p, const Simulator::Snapshot& st, double t) {
        return history_at(inst, p, st, t, kSpec, false);
      });
  std::printf("[ pairs    ] %d nodes along %d optimal, some good and some random schedules (above the value "
              "without pairs at %d)\n",
              n.nodes, n.optimal_paths, n.above);
  EXPECT_GT(n.optimal_paths, range.share(10));
  EXPECT_GT(n.nodes, range.share(400));
  EXPECT_GT(n.above, range.share(20));
}
INSTANTIATE_TEST_SUITE_P(Seed61, SpecRulesWithPairReleasesAlongSchedules,
                         testing::ValuesIn(test_support::case_ranges(36, 3)), test_support::case_range_name);

// The solver with it (the default) against the brute-force oracle on tiny plain pipelines whose
// first stage offloads under tight memory: the same optimum, and the relaxation at the root and
// along the oracle's best schedule never above it.
TEST(SingleStageSpecRules, TheSolverWithItFindsTheBruteForceOptimum) {
  std::mt19937 rng(91);
  int checked = 0;
  for (int i = 0; i < 60 && checked < 12; ++i) {
    test_support::RandomInstanceOptions o;
    o.min_devices = o.max_devices = 2;
    o.min_microbatches = 2;
    o.max_microbatches = 3;
    o.offloadable_probability = 1.0;
    o.split_probability = 1.0;
    o.allow_multi_stage = false;
    o.tight_memory = true;
    Instance inst = test_support::random_instance(rng, o);
    inst.offload_levels = {0.0, 1.0};
    if (!single_stage_relaxation_applies(inst, BoundProblem(inst), 0, kSpec)) continue;
    const test_support::BruteForceResult bf = test_support::brute_force_optimum(inst, 300'000);
    if (bf.aborted || !bf.feasible) continue;
    ++checked;
    SCOPED_TRACE("instance " + std::to_string(i));
    const SingleStageRelaxation root = relax_spec(inst);
    if (root.finished) EXPECT_LE(root.bound, bf.optimum + 1e-6);
    const BoundProblem p(inst);
    along_path(inst, bf.best, [&](const Simulator::Snapshot& st, double t, int depth) {
      const SingleStageRelaxation h = history_at(inst, p, st, t);
      if (h.finished) EXPECT_LE(h.bound, bf.optimum + 1e-6) << "depth " << depth;
    });
    SolveOptions opt;
    opt.threads = 1;
    const SolveResult r = solve(inst, {}, opt);
    ASSERT_EQ(r.status, SolveResult::Status::kOptimal) << r.reason;
    EXPECT_NEAR(r.makespan, bf.optimum, 1e-6);
  }
  EXPECT_GE(checked, 8);
}

// In the solver: on offload-slow-cousin-138 (offload_slow_like's kind: 4 devices, 5
// microbatches) the root bound is the optimum when the first stage follows the spec's start
// rules (the search only has to find a schedule that reaches it: 148 nodes when this test was
// written), where the free model's root bound stays below it and the proof takes 67k nodes.
TEST(SingleStageSpecRules, OnACousinTheRootBoundIsTheOptimumWithIt) {
  const Instance inst = relaxation_data("offload-slow-cousin-138");
  SolveOptions opt = one_thread(200'000);
  opt.time_limit = 30;
  const SolveResult with = solve_printed("offload-slow-cousin-138, spec rules", inst, opt);
  ASSERT_EQ(with.status, SolveResult::Status::kOptimal) << with.reason;
  EXPECT_NEAR(with.makespan, 210.161, 1e-3);
  EXPECT_GE(with.root_bound, with.makespan - 1e-6);
  opt.spec_start_rules = false;
  const SolveResult free = solve_printed("offload-slow-cousin-138, free model", inst, opt);
  EXPECT_LT(free.root_bound, with.makespan - 0.1);
  if (free.status == SolveResult::Status::kOptimal) EXPECT_NEAR(free.makespan, with.makespan, 1e-6);
  EXPECT_GT(free.stats.nodes, 10 * with.stats.nodes + 1000);
}

// The order of the relaxed optimum (SingleStageRelaxation::order) is a valid list for the
// stage's device: put in place of that device's list in a heuristic's schedule, the schedule
// passes check_structure (every op once, FIFO per type, each reload after its offloaded
// forward and before its B).
TEST(SingleStageSpecRules, TheRelaxedOrderIsAValidListForItsDevice) {
  std::mt19937 rng(29);
  int checked = 0, with_reloads = 0;
  for (int i = 0; i < 80; ++i) {
    const Instance inst = i % 2 == 0 ? random_plain_offload(rng, 5) : offload_slow_like(rng, 3, 4, 4, 6);
    const BoundProblem p(inst);
    const BestResult heur = run_all_heuristics(inst);
    if (!heur.best_result()) continue;
    const SingleStageRelaxation r = single_stage_relaxation(inst, p, 0, root_heads(inst, p), heur.best_result()->sim.makespan,
                                                            kNodes, 0, true, strongest_start_rules(inst, p, 0));
    if (!r.exact) {
      EXPECT_TRUE(r.order.empty());
      continue;
    }
    Schedule sch = *heur.best_result()->schedule;
    sch.devices[static_cast<std::size_t>(inst.stages[0].device)] = r.order;
    const auto violations = check_structure(inst, sch);
    EXPECT_TRUE(violations.empty()) << "instance " << i << ": " << violations.front().message;
    with_reloads += std::any_of(r.order.begin(), r.order.end(), [](const Action& a) { return a.type == OpType::R; });
    ++checked;
  }
  std::printf("[ order    ] %d relaxed orders checked, %d with reloads\n", checked, with_reloads);
  EXPECT_GT(checked, 30);
  EXPECT_GT(with_reloads, 10);
}

TEST(SingleStageSpecRules, AppliesToTheFirstStageOnly) {
  const Instance slow = shipped("offload-slow-pcie-4x8");
  const BoundProblem p(slow);
  EXPECT_TRUE(single_stage_relaxation_applies(slow, p, 0, kSpec));
  EXPECT_FALSE(single_stage_relaxation_applies(slow, p, 1, kSpec));  // its forwards wait for stage 0
  EXPECT_TRUE(single_stage_relaxation_applies(slow, p, 1, StartRules::kFree));
  EXPECT_EQ(strongest_start_rules(slow, p, 0), kSpec);
  EXPECT_EQ(strongest_start_rules(slow, p, 1), StartRules::kFree);
  const Instance v = shipped("v-4x8");  // stage 0 shares its device: neither model applies
  EXPECT_FALSE(single_stage_relaxation_applies(v, BoundProblem(v), 0, kSpec));
}

TEST(SingleStageRelaxation, AppliesOnlyWhereItsModelHolds) {
  const Instance slow = shipped("offload-slow-pcie-4x8");
  Instance levels = slow;
  levels.offload_levels = {0.0, 0.5, 1.0};
  EXPECT_FALSE(relax(levels, 0).applicable);  // partial offloads: not modelled
  Instance unsplit = slow;
  unsplit.split_backward = false;
  EXPECT_FALSE(relax(unsplit, 0).applicable);
  const Instance v = shipped("v-4x8");  // two stages on every device
  EXPECT_FALSE(relax(v, 0).applicable);
  // Out of nodes: applicable, unfinished, and no claim.
  const SingleStageRelaxation cut_short = relax(slow, 0, std::numeric_limits<double>::infinity(), 50);
  EXPECT_TRUE(cut_short.applicable);
  EXPECT_FALSE(cut_short.finished);
  EXPECT_EQ(cut_short.bound, 0.0);
  // A cutoff below the relaxed optimum: the search proves only that, and returns the cutoff.
  const SingleStageRelaxation capped = relax(slow, 0, 300.0);
  EXPECT_TRUE(capped.finished);
  EXPECT_NEAR(capped.bound, 300.0, 1e-6);
  EXPECT_LE(capped.bound, 300.0);
  EXPECT_FALSE(capped.exact);  // nothing below the cutoff: only a lower bound
}

}  // namespace
}  // namespace optpipe
