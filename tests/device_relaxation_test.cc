// bounds/device_relaxation.h: the device relaxation is a lower bound (never above a proven
// optimum, obtained without it, nor above any feasible schedule's makespan), its pruned search
// finds what the plain enumeration of the same model finds, it applies only where its model
// holds, its order is a valid list for its device, and on small-v-04 (bench/solvers/
// random_small.py, seed 1) it lifts the root bound from 27.26 ms to the optimum, 33.23 ms. With
// the pair releases: never below the value without them, still a lower bound, the same
// pruned and plain, and on small-v-02 the optimum, 43.77 ms, where without them 43.57.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "bounds/bound_problem.h"
#include "bounds/device_relaxation.h"
#include "bounds/heads.h"
#include "bounds/last_tails.h"
#include "bounds/node_times.h"
#include "heuristics/registry.h"
#include "model/instance_io.h"
#include "model/schedule_io.h"
#include "model/simulator.h"
#include "model/validator.h"
#include "search/solver.h"
#include "tests/feasible_makespans.h"
#include "tests/root_heads.h"
#include "tests/test_paths.h"
#include "tests/test_util.h"

namespace optpipe {
namespace {

namespace fs = std::filesystem;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr std::int64_t kNodes = 2'000'000;

using test_support::root_heads;

DeviceRelaxation relax(const Instance& inst, int d, double cutoff = kInf, std::int64_t nodes = kNodes,
                       bool prune = true, bool pairs = false) {
  const BoundProblem p(inst);
  return device_relaxation(inst, p, d, root_heads(inst, p), cutoff, nodes, 0, prune, pairs);
}

using test_support::random_multi_stage;

using test_support::feasible_makespans;

Instance small_v04() {
  return load_instance((fs::path(OPTPIPE_SOURCE_DIR) / "tests" / "data" / "relaxation" / "small-v-04.json").string());
}

SolveOptions without_it(std::int64_t node_limit) {
  SolveOptions opt;
  opt.threads = 1;
  opt.node_limit = node_limit;
  opt.time_limit = 10;
  opt.device_relaxation = false;
  return opt;
}

SolveOptions with_it(std::int64_t node_limit) {
  SolveOptions opt = without_it(node_limit);
  opt.device_relaxation = true;
  return opt;
}

TEST(DeviceRelaxation, LiftsTheRootBoundOfSmallV04ToItsOptimum) {
  const Instance inst = small_v04();
  const BoundProblem p(inst);
  std::vector<double> values;
  for (int d = 0; d < inst.num_devices(); ++d) {
    const DeviceRelaxation r = relax(inst, d);
    ASSERT_TRUE(r.applicable && r.finished && r.exact) << "device " << d << ", " << r.nodes << " nodes";
    values.push_back(r.bound);
  }
  std::printf("[ device   ] small-v-04: %.4f %.4f %.4f %.4f ms\n", values[0], values[1], values[2], values[3]);
  // Device 3 holds stages 3 and 4 (the V's turn) with room for 4 activations: the relaxed optimum
  // is the solver's optimum (proven below without the relaxation).
  EXPECT_NEAR(values[3], 33.23, 1e-6);
  const SolveResult exact = solve(inst, {}, without_it(-1));
  ASSERT_EQ(exact.status, SolveResult::Status::kOptimal);
  EXPECT_NEAR(exact.makespan, 33.23, 1e-6);
  EXPECT_NEAR(exact.root_bound, 27.26, 1e-6);  // the other root bounds
  for (double v : values) EXPECT_LE(v, exact.makespan + 1e-6);
  // The solver with it: the root bound is the optimum.
  const SolveOptions with = with_it(-1);
  const SolveResult r = solve(inst, {}, with);
  ASSERT_EQ(r.status, SolveResult::Status::kOptimal);
  EXPECT_NEAR(r.makespan, 33.23, 1e-6);
  EXPECT_NEAR(r.root_bound, 33.23, 1e-6);
  EXPECT_EQ(r.stats.device_relaxation_device, 3);
  EXPECT_GT(r.stats.device_relaxation_nodes, 0);
  EXPECT_NEAR(root_lower_bound(inst, kInf, with).bound, 33.23, 1e-6);
  EXPECT_NEAR(root_lower_bound(inst, kInf, without_it(-1)).bound, 27.26, 1e-6);
}

TEST(DeviceRelaxation, NeverAboveTheOptimumOrAnySchedule) {
  std::mt19937 rng(41);
  int devices = 0, proven = 0, equal = 0, above_root = 0, schedules = 0;
  for (int i = 0; i < 200; ++i) {
    const Instance inst = random_multi_stage(rng, 5);
    const SolveResult exact = solve(inst, {}, without_it(300'000));
    if (exact.status == SolveResult::Status::kInfeasible) continue;
    const bool optimal = exact.status == SolveResult::Status::kOptimal;
    proven += optimal ? 1 : 0;
    const std::vector<double> makespans = feasible_makespans(inst, rng);
    schedules += static_cast<int>(makespans.size());
    for (int d = 0; d < inst.num_devices(); ++d) {
      const DeviceRelaxation r = relax(inst, d);
      if (!r.applicable || !r.finished) continue;
      ++devices;
      SCOPED_TRACE("instance " + std::to_string(i) + ", device " + std::to_string(d));
      if (exact.schedule) EXPECT_LE(r.bound, exact.makespan + 1e-6);
      if (optimal) equal += r.bound >= exact.makespan - 1e-6 ? 1 : 0;
      above_root += r.bound > exact.root_bound + 1e-6 ? 1 : 0;
      for (double ms : makespans) EXPECT_LE(r.bound, ms + 1e-6);
    }
  }
  std::printf("[ device   ] %d devices bounded on %d proven instances (the bound equals the optimum on %d, is above the "
              "other root bounds on %d), %d feasible schedules\n",
              devices, proven, equal, above_root, schedules);
  EXPECT_GT(devices, 100);
  EXPECT_GT(proven, 80);
  EXPECT_GT(above_root, 20);  // it bounds something the others do not
  EXPECT_GT(schedules, 300);  // most random lists deadlock under this memory
}

TEST(DeviceRelaxation, PrunedSearchFindsWhatThePlainEnumerationFinds) {
  std::mt19937 rng(5);
  int compared = 0;
  for (int i = 0; i < 80 && compared < 30; ++i) {
    const Instance inst = random_multi_stage(rng, 3);
    for (int d = 0; d < inst.num_devices(); ++d) {
      const DeviceRelaxation plain = relax(inst, d, kInf, 3'000'000, false);
      // (Not exact: no relaxed schedule at all, e.g. two activations of the V's turn do not fit.)
      if (!plain.applicable || !plain.finished || !plain.exact) continue;
      const DeviceRelaxation pruned = relax(inst, d);
      ASSERT_TRUE(pruned.finished);
      EXPECT_NEAR(pruned.bound, plain.bound, 1e-6) << "instance " << i << ", device " << d;
      EXPECT_LE(pruned.nodes, plain.nodes);
      // A cutoff above the optimum changes nothing; one at or below it is what it proves.
      const DeviceRelaxation above = relax(inst, d, plain.bound + 1.0);
      EXPECT_NEAR(above.bound, plain.bound, 1e-6);
      EXPECT_TRUE(above.exact);
      const DeviceRelaxation below = relax(inst, d, plain.bound - 0.5);
      EXPECT_TRUE(below.finished && !below.exact);
      EXPECT_NEAR(below.bound, plain.bound - 0.5 - 1e-7, 1e-9);
      // A floor below the optimum changes nothing; one at or above it (a bound known already)
      // stops the search unfinished at a relaxed schedule no longer than the floor.
      const BoundProblem p(inst);
      const DeviceRelaxation low = device_relaxation(inst, p, d, root_heads(inst, p), kInf, kNodes, 0, true, false,
                                                     plain.bound - 0.5);
      EXPECT_TRUE(low.finished);
      EXPECT_NEAR(low.bound, plain.bound, 1e-6);
      EXPECT_EQ(low.nodes, pruned.nodes);
      for (double floor : {plain.bound, plain.bound + 1.0}) {
        const DeviceRelaxation high = device_relaxation(inst, p, d, root_heads(inst, p), kInf, kNodes, 0, true, false,
                                                        floor);
        EXPECT_FALSE(high.finished);
        EXPECT_EQ(high.bound, 0.0);
        EXPECT_LE(high.upper, floor + 1e-6);
        EXPECT_LE(high.nodes, pruned.nodes);
      }
      ++compared;
    }
  }
  EXPECT_GE(compared, 20);
}

Instance small_v02() {
  return load_instance((fs::path(OPTPIPE_SOURCE_DIR) / "tests" / "data" / "relaxation" / "small-v-02.json").string());
}

// small-v-02: device 3 holds stages 3 and 4 (the V's turn) and 4 activations of room; each
// microbatch's round trip from stage 4 goes through devices 2, 1 and 0. Alone each returns after
// the latency, but two that enter together cannot both: with the pair releases the device's
// relaxed optimum is 43.77 ms, a schedule's makespan (tests/data/relaxation/
// small-v-02-optimum.json, found by `optpipe solve`), so that schedule is optimal at the root.
TEST(DeviceRelaxation, ThePairReleasesLiftSmallV02ToItsOptimum) {
  const Instance inst = small_v02();
  const DeviceRelaxation plain = relax(inst, 3);
  const DeviceRelaxation pairs = relax(inst, 3, kInf, kNodes, true, true);
  ASSERT_TRUE(plain.finished && plain.exact);
  ASSERT_TRUE(pairs.finished && pairs.exact);
  std::printf("[ device   ] small-v-02 device 3: %.4f ms (%lld nodes), with the pair releases %.4f ms (%lld nodes)\n",
              plain.bound, static_cast<long long>(plain.nodes), pairs.bound, static_cast<long long>(pairs.nodes));
  EXPECT_NEAR(plain.bound, 43.57, 1e-6);
  EXPECT_NEAR(pairs.bound, 43.77, 1e-6);
  const Schedule best = load_schedule(
      (fs::path(OPTPIPE_SOURCE_DIR) / "tests" / "data" / "relaxation" / "small-v-02-optimum.json").string());
  const SimResult sim = simulate(inst, best);
  ASSERT_TRUE(sim.feasible);
  EXPECT_NEAR(sim.makespan, 43.77, 1e-6);

  // The solver's root: the second pass raises the bound and keeps the first pass's order.
  SolveOptions no_pairs = with_it(-1);
  no_pairs.device_pairs = false;
  const RootBound without = root_lower_bound(inst, kInf, no_pairs);
  const RootBound with = root_lower_bound(inst, kInf, with_it(-1));
  EXPECT_NEAR(without.bound, 43.57, 1e-6);
  EXPECT_EQ(without.device_pairs_raised, 0.0);
  EXPECT_NEAR(with.bound, 43.77, 1e-6);
  EXPECT_NEAR(with.device_pairs_raised, 0.20, 1e-6);
  EXPECT_EQ(with.relaxed_device, 3);
  EXPECT_EQ(with.device_order, without.device_order);
  EXPECT_EQ(with.device_order, plain.order);
  // With the optimum as its warm start, the search proves it at the root.
  const SolveResult r = solve(inst, {best}, with_it(-1));
  ASSERT_EQ(r.status, SolveResult::Status::kOptimal);
  EXPECT_NEAR(r.makespan, 43.77, 1e-6);
  EXPECT_EQ(r.stats.nodes, 0);
}

// With the pair releases the relaxation is never below the value without them (it only adds
// releases) and still never above a proven optimum or a feasible schedule.
TEST(DeviceRelaxation, WithThePairReleasesStillALowerBound) {
  std::mt19937 rng(43);
  int devices = 0, raised = 0, proven = 0;
  for (int i = 0; i < 150; ++i) {
    const Instance inst = random_multi_stage(rng, 5);
    const SolveResult exact = solve(inst, {}, without_it(300'000));
    if (exact.status == SolveResult::Status::kInfeasible) continue;
    proven += exact.status == SolveResult::Status::kOptimal ? 1 : 0;
    const std::vector<double> makespans = feasible_makespans(inst, rng);
    for (int d = 0; d < inst.num_devices(); ++d) {
      const DeviceRelaxation plain = relax(inst, d);
      const DeviceRelaxation pairs = relax(inst, d, kInf, kNodes, true, true);
      if (!plain.applicable || !plain.finished || !pairs.finished) continue;
      ++devices;
      SCOPED_TRACE("instance " + std::to_string(i) + ", device " + std::to_string(d));
      EXPECT_GE(pairs.bound, plain.bound - 1e-9);
      raised += pairs.bound > plain.bound + 1e-6 ? 1 : 0;
      if (exact.schedule) EXPECT_LE(pairs.bound, exact.makespan + 1e-6);
      for (double ms : makespans) EXPECT_LE(pairs.bound, ms + 1e-6);
    }
  }
  std::printf("[ device   ] with the pair releases: %d devices bounded (%d instances proven), raised on %d\n", devices,
              proven, raised);
  EXPECT_GT(devices, 100);
  EXPECT_GT(raised, 5);  // they bound something the relaxation without them does not
}

// The pruned search with the pair releases (bound, dominance) finds what their plain
// enumeration finds. The dominance must compare what each branch's releases depend on: the
// next forward's release pair reads the last forward's end itself, which the free time may
// hide in the B's release. Without that, instances 805 and 923 of this sequence (up to 4
// microbatches; found by comparing the first 3000, 160 s) got a larger value pruned than plain.
TEST(DeviceRelaxation, WithThePairReleasesThePrunedSearchFindsWhatThePlainEnumerationFinds) {
  std::mt19937 rng(7);
  int compared = 0, raised = 0;
  for (int i = 0; i <= 923; ++i) {
    const Instance inst = random_multi_stage(rng, 4);
    if (i >= 40 && i != 805 && i != 923) continue;
    for (int d = 0; d < inst.num_devices(); ++d) {
      const DeviceRelaxation plain = relax(inst, d, kInf, 3'000'000, false, true);
      if (!plain.applicable || !plain.finished || !plain.exact) continue;
      const DeviceRelaxation pruned = relax(inst, d, kInf, kNodes, true, true);
      ASSERT_TRUE(pruned.finished);
      EXPECT_NEAR(pruned.bound, plain.bound, 1e-6) << "instance " << i << ", device " << d;
      raised += plain.bound > relax(inst, d).bound + 1e-6 ? 1 : 0;
      ++compared;
    }
  }
  std::printf("[ device   ] with the pair releases, pruned = plain on %d devices (raised on %d)\n", compared, raised);
  EXPECT_GE(compared, 20);
  EXPECT_GE(raised, 1);
}

// The releases along the chains (kChainReleasesFrom: past the search's first 2000 nodes) from
// its first node: the same values as the plain enumeration, with and without the pair releases
// (whose B releases they carry on), and fewer nodes than without them.
TEST(DeviceRelaxation, WithTheReleasesAlongTheChainsThePrunedSearchFindsWhatThePlainEnumerationFinds) {
  std::mt19937 rng(11);
  int compared = 0, fewer = 0;
  std::int64_t nodes_without = 0, nodes_with = 0;
  for (int i = 0; i < 120 && compared < 40; ++i) {
    const Instance inst = random_multi_stage(rng, i % 2 == 0 ? 3 : 4);
    const BoundProblem p(inst);
    const std::vector<double> head = root_heads(inst, p);
    for (int d = 0; d < inst.num_devices(); ++d) {
      for (const bool pairs : {false, true}) {
        const DeviceRelaxation plain = relax(inst, d, kInf, 3'000'000, false, pairs);
        if (!plain.applicable || !plain.finished || !plain.exact) continue;
        SCOPED_TRACE("instance " + std::to_string(i) + ", device " + std::to_string(d) + (pairs ? ", pairs" : ""));
        const DeviceRelaxation without =
            device_relaxation(inst, p, d, head, kInf, kNodes, 0, true, pairs, -kInf, kNodes);
        const DeviceRelaxation with = device_relaxation(inst, p, d, head, kInf, kNodes, 0, true, pairs, -kInf, 0);
        ASSERT_TRUE(with.finished && without.finished);
        EXPECT_NEAR(with.bound, plain.bound, 1e-6);
        EXPECT_NEAR(without.bound, plain.bound, 1e-6);
        // A cutoff at or below the optimum is what both prove.
        const DeviceRelaxation below =
            device_relaxation(inst, p, d, head, plain.bound - 0.25, kNodes, 0, true, pairs, -kInf, 0);
        EXPECT_TRUE(below.finished && !below.exact);
        nodes_without += without.nodes;
        nodes_with += with.nodes;
        fewer += with.nodes < without.nodes ? 1 : 0;
        ++compared;
      }
    }
  }
  std::printf("[ device   ] releases along the chains: pruned = plain on %d searches, %lld -> %lld nodes (fewer on "
              "%d)\n",
              compared, static_cast<long long>(nodes_without), static_cast<long long>(nodes_with), fewer);
  EXPECT_GE(compared, 30);
  EXPECT_LT(nodes_with, nodes_without);  // they cut something Jackson's bound without them does not
  EXPECT_GT(fewer, 3);
}

TEST(DeviceRelaxation, TheRelaxedOrderIsAValidListForItsDevice) {
  const Instance inst = small_v04();
  const DeviceRelaxation r = relax(inst, 3);
  ASSERT_TRUE(r.exact);
  const BestResult h = run_all_heuristics(inst, false);
  ASSERT_GE(h.best, 0);
  Schedule hybrid = *h.results[static_cast<std::size_t>(h.best)].schedule;
  hybrid.devices[3] = r.order;
  EXPECT_TRUE(check_structure(inst, hybrid).empty());
  // Its first ops: device 3 (stages 3 and 4) takes F3.0 then F4.0, the V's turn.
  ASSERT_GE(r.order.size(), 2u);
  EXPECT_EQ(to_string(r.order[0]), "F3.0");
  EXPECT_EQ(to_string(r.order[1]), "F4.0");
}

TEST(DeviceRelaxation, AppliesOnlyWhereItsModelHolds) {
  Instance inst = small_v04();
  const BoundProblem p(inst);
  for (int d = 0; d < inst.num_devices(); ++d) EXPECT_TRUE(device_relaxation_applies(inst, p, d));
  EXPECT_FALSE(device_relaxation_applies(inst, p, -1));
  EXPECT_FALSE(device_relaxation_applies(inst, p, inst.num_devices()));
  // A stage that can offload: its device no longer (its memory can be freed by transfers).
  Instance off = inst;
  off.stages[4].offload = 1.0;
  off.stages[4].reload = 1.0;
  const BoundProblem po(off);
  EXPECT_FALSE(device_relaxation_applies(off, po, 3));
  EXPECT_TRUE(device_relaxation_applies(off, po, 0));
  EXPECT_FALSE(device_relaxation(off, po, 3, {}, kInf, kNodes).applicable);
  // Memory to spare: every activation fits at once.
  Instance roomy = inst;
  for (Device& dev : roomy.devices) dev.memory_limit = 1e15;
  const BoundProblem pr(roomy);
  EXPECT_FALSE(device_relaxation_applies(roomy, pr, 0));
  // One stage per device: the single-stage relaxation's case.
  std::mt19937 rng(3);
  test_support::RandomInstanceOptions o;
  o.allow_multi_stage = false;
  o.tight_memory = true;
  o.offloadable_probability = 0.0;
  const Instance chain = test_support::random_instance(rng, o);
  const BoundProblem pc(chain);
  for (int d = 0; d < chain.num_devices(); ++d) EXPECT_FALSE(device_relaxation_applies(chain, pc, d));
}

// At a node: whether the device can still end below the cutoff. Every node on a feasible
// schedule's path has that schedule as a completion, so with the cutoff just above its makespan
// the relaxation never cuts there; with the cutoff at the optimum it cuts nodes of worse
// schedules, and never one on an optimal schedule's path.
bool cuts(const Instance& inst, const BoundProblem& p, int d, const Simulator::Snapshot& st, double t, double cutoff) {
  NodeTimes times;
  fill_node_times(p, st, t, times);
  std::vector<double> head, finish;
  compute_heads(p, times, head, finish);
  const DeviceRelaxation r = device_relaxation_at_node(inst, p, d, times, head, cutoff, kNodes);
  // The search's way, with every stage's last tails computed once beforehand: the same answer.
  std::vector<LastTails> tails;
  for (int s = 0; s < p.S; ++s) tails.push_back(last_tail_choices(p, s));
  const DeviceRelaxation given = device_relaxation_at_node(inst, p, d, times, head, cutoff, kNodes, &tails);
  EXPECT_EQ(given.finished, r.finished);
  EXPECT_EQ(given.bound, r.bound);
  EXPECT_EQ(given.nodes, r.nodes);
  const bool cut = r.finished && r.bound >= cutoff - 1e-6;
  // With the releases along the chains from the first node: the same answer.
  const DeviceRelaxation chained = device_relaxation_at_node(inst, p, d, times, head, cutoff, kNodes, &tails, nullptr, 0);
  EXPECT_EQ(chained.finished && chained.bound >= cutoff - 1e-6, cut);
  return cut;
}

TEST(DeviceRelaxation, AtANodeNeverCutsACompletionButCutsWorseSchedules) {
  std::mt19937 rng(17);
  int nodes = 0, cut = 0, instances = 0;
  for (int i = 0; i < 60 && instances < 25; ++i) {
    const Instance inst = random_multi_stage(rng, 4);
    const BoundProblem p(inst);
    const SolveResult exact = solve(inst, {}, without_it(300'000));
    if (exact.status != SolveResult::Status::kOptimal) continue;
    const std::vector<int> devices = device_relaxation_devices(inst, p);
    if (devices.empty()) continue;
    ++instances;
    std::vector<Schedule> schedules{*exact.schedule};
    for (const HeuristicResult& h : run_all_heuristics(inst, false).results) {
      if (h.ok()) schedules.push_back(*h.schedule);
    }
    for (const Schedule& sch : schedules) {
      const double makespan = simulate(inst, sch, SimOptions::quiet()).makespan;
      const bool optimal = makespan <= exact.makespan + 1e-6;
      test_support::along_path(inst, sch, [&](const Simulator::Snapshot& st, double t, int depth) {
        for (int d : devices) {
          ++nodes;
          EXPECT_FALSE(cuts(inst, p, d, st, t, makespan + 1e-3))
              << "instance " << i << ", device " << d << ", depth " << depth;
          const bool c = cuts(inst, p, d, st, t, exact.makespan + 1e-3);
          if (optimal) EXPECT_FALSE(c) << "instance " << i << ", device " << d << ", depth " << depth;
          cut += c ? 1 : 0;
        }
      });
    }
  }
  std::printf("[ device   ] at %d nodes along optimal and heuristic schedules of %d instances: %d cut at the optimum\n",
              nodes, instances, cut);
  EXPECT_GE(instances, 15);
  EXPECT_GT(nodes, 1000);
  EXPECT_GT(cut, 50);  // it does cut the worse schedules' nodes
}

// What the solver's memo of node answers rests on (device_relaxation_node_params): with the key
// (d's started ops and their ends) fixed, raising the device's free time, the makespan so far or
// the heads of d's ops not started never turns a cut into a relaxed schedule below the cutoff.
TEST(DeviceRelaxation, AtANodeACutStaysACutWhenTheParamsRise) {
  std::mt19937 rng(29);
  std::uniform_real_distribution<double> more(0.0, 2.0);
  int compared = 0, cut_before = 0, cut_only_after = 0;
  for (int i = 0; i < 60 && compared < 3000; ++i) {
    const Instance inst = random_multi_stage(rng, 4);
    const BoundProblem p(inst);
    const std::vector<int> devices = device_relaxation_devices(inst, p);
    const BestResult h = run_all_heuristics(inst, false);
    if (devices.empty() || h.best < 0) continue;
    const Schedule& sch = *h.results[static_cast<std::size_t>(h.best)].schedule;
    const double cutoff = 0.97 * simulate(inst, sch, SimOptions::quiet()).makespan;
    test_support::along_path(inst, sch, [&](const Simulator::Snapshot& st, double t, int) {
      NodeTimes times;
      fill_node_times(p, st, t, times);
      std::vector<double> head, finish;
      compute_heads(p, times, head, finish);
      for (int d : devices) {
        NodeTimes raised = times;
        std::vector<double> raised_head = head;
        raised.device_free[static_cast<std::size_t>(d)] += more(rng);
        raised.makespan_so_far += more(rng) * 0.5;
        for (std::size_t o = 0; o < raised_head.size(); ++o) {
          if (raised_head[o] == raised_head[o] && more(rng) < 1.0) raised_head[o] += more(rng);
        }
        EXPECT_EQ(device_relaxation_node_key(p, d, times), device_relaxation_node_key(p, d, raised));
        const std::vector<double> lo = device_relaxation_node_params(p, d, times, head);
        const std::vector<double> hi = device_relaxation_node_params(p, d, raised, raised_head);
        ASSERT_EQ(lo.size(), hi.size());
        for (std::size_t k = 0; k < lo.size(); ++k) EXPECT_LE(lo[k], hi[k]);
        const DeviceRelaxation a = device_relaxation_at_node(inst, p, d, times, head, cutoff, kNodes);
        const DeviceRelaxation b = device_relaxation_at_node(inst, p, d, raised, raised_head, cutoff, kNodes);
        const bool cut_a = a.finished && a.bound >= cutoff - 1e-6, cut_b = b.finished && b.bound >= cutoff - 1e-6;
        if (cut_a) EXPECT_TRUE(cut_b) << "instance " << i << ", device " << d;
        if (!b.finished && b.upper < cutoff) EXPECT_LT(a.upper, cutoff);  // below after: below before
        ++compared;
        cut_before += cut_a ? 1 : 0;
        cut_only_after += cut_b && !cut_a ? 1 : 0;
      }
    });
  }
  std::printf("[ device   ] %d nodes against themselves with larger params: cut before %d, only after %d\n", compared,
              cut_before, cut_only_after);
  EXPECT_GT(compared, 1000);
  EXPECT_GT(cut_before, 100);
  EXPECT_GT(cut_only_after, 10);  // raising the params does matter
}

// Witnesses (device_relaxation_at_node's `witnesses`): the relaxed schedule a node's search
// stopped at, given back at the same node, answers at once with the same makespan (its ops re-timed
// as the search placed them); given at the next node of the path, or shuffled, it answers only
// where the search does not cut (where it is no relaxed schedule of that node, the search runs).
TEST(DeviceRelaxation, AtANodeAWitnessAnswersOnlyWhereTheSearchDoesNotCut) {
  std::mt19937 rng(31);
  int same = 0, next_answered = 0, next_refused = 0, shuffled_answered = 0, shuffled_refused = 0, instances = 0;
  for (int i = 0; i < 80 && instances < 30; ++i) {
    const Instance inst = random_multi_stage(rng, 4);
    const BoundProblem p(inst);
    const std::vector<int> devices = device_relaxation_devices(inst, p);
    const BestResult h = run_all_heuristics(inst, false);
    if (devices.empty() || h.best < 0) continue;
    ++instances;
    const Schedule& sch = *h.results[static_cast<std::size_t>(h.best)].schedule;
    const double makespan = simulate(inst, sch, SimOptions::quiet()).makespan;
    for (const double cutoff : {0.97 * makespan, makespan + 1e-3}) {
      std::vector<std::vector<std::vector<Action>>> last(static_cast<std::size_t>(inst.num_devices()));
      test_support::along_path(inst, sch, [&](const Simulator::Snapshot& st, double t, int depth) {
        NodeTimes times;
        fill_node_times(p, st, t, times);
        std::vector<double> head, finish;
        compute_heads(p, times, head, finish);
        for (int d : devices) {
          const DeviceRelaxation plain = device_relaxation_at_node(inst, p, d, times, head, cutoff, kNodes);
          EXPECT_FALSE(plain.from_witness);
          const bool cut = plain.finished && plain.bound >= cutoff - 1e-6;
          // An answer's makespan is a relaxed schedule's: the search, asked for one below just
          // above it, finds one.
          auto is_relaxed_schedule = [&](double upper) {
            const DeviceRelaxation r = device_relaxation_at_node(inst, p, d, times, head, upper + 1e-6, kNodes);
            return !(r.finished && r.bound >= upper + 1e-6 - 1e-6);
          };
          std::vector<std::vector<Action>>& before = last[static_cast<std::size_t>(d)];
          // The last node's witness here (or the one before it, if that answered).
          if (!before.empty()) {
            const DeviceRelaxation w = device_relaxation_at_node(inst, p, d, times, head, cutoff, kNodes, nullptr, &before);
            if (w.from_witness) {
              EXPECT_FALSE(cut) << "instance " << i << ", device " << d << ", depth " << depth;
              EXPECT_LT(w.upper, cutoff);
              EXPECT_EQ(w.nodes, 0);
              EXPECT_TRUE(is_relaxed_schedule(w.upper)) << "instance " << i << ", device " << d << ", depth " << depth;
              ++next_answered;
            } else {
              EXPECT_EQ(w.finished, plain.finished);  // the search, as without it
              EXPECT_EQ(w.bound, plain.bound);
              ++next_refused;
            }
            // Shuffled: every op anywhere, or adjacent ops of different stages or types swapped
            // (FIFO kept; inputs, memory and the cutoff decide).
            std::vector<Action> mixed = before.front();
            if (rng() % 2 == 0) {
              std::shuffle(mixed.begin(), mixed.end(), rng);
            } else {
              for (int k = 0; k < 6 && mixed.size() >= 2; ++k) {
                const std::size_t q = rng() % (mixed.size() - 1);
                if (mixed[q].type != mixed[q + 1].type || mixed[q].stage != mixed[q + 1].stage) {
                  std::swap(mixed[q], mixed[q + 1]);
                }
              }
            }
            const std::vector<std::vector<Action>> shuffled{mixed};
            const DeviceRelaxation x = device_relaxation_at_node(inst, p, d, times, head, cutoff, kNodes, nullptr, &shuffled);
            if (x.from_witness) {
              EXPECT_FALSE(cut) << "instance " << i << ", device " << d << ", depth " << depth;
              EXPECT_TRUE(is_relaxed_schedule(x.upper)) << "instance " << i << ", device " << d << ", depth " << depth;
            }
            (x.from_witness ? shuffled_answered : shuffled_refused) += 1;
          }
          if (plain.witness.empty()) continue;
          EXPECT_FALSE(plain.finished);
          EXPECT_LT(plain.upper, cutoff);
          const std::vector<std::vector<Action>> own{plain.witness};
          const DeviceRelaxation again = device_relaxation_at_node(inst, p, d, times, head, cutoff, kNodes, nullptr, &own);
          EXPECT_TRUE(again.from_witness) << "instance " << i << ", device " << d << ", depth " << depth;
          EXPECT_NEAR(again.upper, plain.upper, 1e-9);
          ++same;
          before = own;
        }
      });
    }
  }
  std::printf("[ device   ] %d instances: %d witnesses answered at their own node; at the next node %d answered, %d "
              "did not; shuffled %d answered, %d did not\n",
              instances, same, next_answered, next_refused, shuffled_answered, shuffled_refused);
  EXPECT_GE(instances, 20);
  EXPECT_GT(same, 500);
  EXPECT_GT(next_answered, 200);  // the next node mostly still has the last one's
  EXPECT_GT(next_refused, 20);
  EXPECT_GT(shuffled_refused, 200);  // most shuffles are no relaxed schedule
  EXPECT_GT(shuffled_answered, 200);  // the swaps often are
}

// The solver with it (at the root and at the nodes) proves the same optima as without it.
TEST(DeviceRelaxation, TheSolverWithItProvesTheSameOptima) {
  std::mt19937 rng(23);
  int both = 0, fewer = 0;
  for (int i = 0; i < 150; ++i) {
    const Instance inst = random_multi_stage(rng, 5);
    const SolveResult a = solve(inst, {}, without_it(300'000));
    const SolveOptions with = with_it(300'000);
    const SolveResult b = solve(inst, {}, with);
    if (a.status != SolveResult::Status::kOptimal || b.status != SolveResult::Status::kOptimal) continue;
    ++both;
    EXPECT_NEAR(a.makespan, b.makespan, 1e-6) << "instance " << i;
    fewer += b.stats.nodes < a.stats.nodes ? 1 : 0;
  }
  std::printf("[ device   ] %d instances proven with and without it (fewer nodes with it on %d)\n", both, fewer);
  EXPECT_GE(both, 40);
  EXPECT_GE(fewer, 20);
}

// Computed once before the search (root_lower_bound, as `optpipe solve` does for its warm
// starts), the search takes it from SolveOptions::root_relaxation instead of searching again.
TEST(DeviceRelaxation, TheSearchReusesTheRootBoundsRelaxation) {
  const Instance inst = small_v04();
  SolveOptions opt = with_it(-1);
  const RootBound root = root_lower_bound(inst, 33.81, opt);
  EXPECT_TRUE(root.device_relaxation_ran);
  EXPECT_EQ(root.relaxed_device, 3);
  EXPECT_NEAR(root.device_relaxation, 33.23, 1e-6);
  EXPECT_EQ(root.device, 3);  // its order guides the local search
  EXPECT_FALSE(root.order.empty());
  opt.root_relaxation = &root;
  const SolveResult r = solve(inst, {}, opt);
  ASSERT_EQ(r.status, SolveResult::Status::kOptimal);
  EXPECT_NEAR(r.makespan, 33.23, 1e-6);
  EXPECT_NEAR(r.root_bound, 33.23, 1e-6);
  EXPECT_EQ(r.stats.device_relaxation_nodes, 0);
  EXPECT_EQ(r.stats.device_relaxation_device, 3);
  EXPECT_GT(r.stats.device_node_calls, 0);  // the nodes ask the same device
}

// At the root each device's relaxation has a node budget, not a time budget: small-loop-03
// (bench/solvers/random_small.py, seed 1) needed about 1.4M nodes on device 0 for 41.72 ms (0.73M
// since the search skips an op that a waiting B or W could have ended before), which
// 0.5 s reached on one 2-core VM and not on one 2.5 times slower (38.98 ms, the other devices'
// relaxations). With 10 s of limit the time only guards (2 s), so every machine gets 41.72.
TEST(DeviceRelaxation, TheRootBudgetIsNodesSoTheBoundIsTheSameOnEveryMachine) {
  const Instance inst =
      load_instance((fs::path(OPTPIPE_SOURCE_DIR) / "tests" / "data" / "relaxation" / "small-loop-03.json").string());
  const RootBound root = root_lower_bound(inst, 42.50, with_it(-1));
  ASSERT_TRUE(root.device_relaxation_ran);
  EXPECT_EQ(root.relaxed_device, 0);
  EXPECT_NEAR(root.device_relaxation, 41.72, 1e-6);
  EXPECT_NEAR(root.bound, 41.72, 1e-6);
  // The same from device 0's relaxation alone, searched to its end.
  const DeviceRelaxation d0 = relax(inst, 0, 42.50, 20'000'000);
  ASSERT_TRUE(d0.finished);
  EXPECT_GT(d0.nodes, 150'000);  // about 0.1 s on a slow machine: a time budget would bind
  EXPECT_NEAR(d0.bound, 41.72, 1e-6);
  // Without the releases along the chains past its first 2000 nodes: the same bound in more.
  const BoundProblem p(inst);
  const DeviceRelaxation plain_releases =
      device_relaxation(inst, p, 0, root_heads(inst, p), 42.50, 20'000'000, 0, true, false, -kInf, 20'000'000);
  ASSERT_TRUE(plain_releases.finished);
  EXPECT_NEAR(plain_releases.bound, 41.72, 1e-6);
  std::printf("[ device   ] small-loop-03's device 0 at the root: %lld nodes, %lld without the releases along the chains\n",
              static_cast<long long>(d0.nodes), static_cast<long long>(plain_releases.nodes));
  EXPECT_LT(d0.nodes, plain_releases.nodes);
}

// At the root the devices go largest first, by a short search of each: on seed-7 small-v-06 of
// bench/solvers/random_small.py device 2 gives 40.21 ms, and device 1 (39.87 exactly) then stops
// at its first relaxed schedule at most that instead of being solved to the end.
TEST(DeviceRelaxation, TheRootTakesTheLargestDeviceFirst) {
  const Instance inst = load_instance(
      (fs::path(OPTPIPE_SOURCE_DIR) / "tests" / "data" / "relaxation" / "seed7-small-v-06.json").string());
  // The cutoff `optpipe solve` has there: the quick local search's 41.32 ms.
  const RootBound root = root_lower_bound(inst, 41.32, with_it(-1));
  ASSERT_TRUE(root.device_relaxation_ran);
  EXPECT_EQ(root.relaxed_device, 2);
  EXPECT_NEAR(root.device_relaxation, 40.21, 1e-6);
  std::printf("[ device   ] seed-7 small-v-06 at the root: %lld nodes\n",
              static_cast<long long>(root.device_relaxation_nodes));
  EXPECT_LT(root.device_relaxation_nodes, 500'000);  // with device 1 solved to its end: 933k
}

TEST(DeviceRelaxation, StopsAtItsNodeLimitClaimingNothing) {
  const Instance inst = small_v04();
  const DeviceRelaxation r = relax(inst, 3, kInf, 10);
  EXPECT_TRUE(r.applicable);
  EXPECT_FALSE(r.finished);
  EXPECT_EQ(r.bound, 0.0);
  EXPECT_LE(r.nodes, 10);
}

}  // namespace
}  // namespace optpipe
