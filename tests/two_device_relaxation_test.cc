// bounds/two_device_relaxation.h: on two-device instances the relaxation is the whole problem,
// and equals the solver's proven optimum; on three devices it is a lower bound (never above a
// proven optimum nor any feasible schedule's makespan) that lifts the root's bound on some; its
// pruned, time-ordered search finds what the plain enumeration of every interleaving finds; and
// it lifts seed-23 small-loop-01 of bench/solvers/random_small.py from 29.02 ms to its optimum,
// 30.02.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "bounds/bound_problem.h"
#include "bounds/two_device_relaxation.h"
#include "model/instance_io.h"
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

using test_support::random_multi_stage;
using test_support::root_heads;

TwoDeviceRelaxation relax(const Instance& inst, int a, int b, double cutoff = kInf, std::int64_t nodes = kNodes,
                          bool prune = true) {
  const BoundProblem p(inst);
  return two_device_relaxation(inst, p, a, b, root_heads(inst, p), cutoff, nodes, prune);
}

SolveOptions exact_options(std::int64_t node_limit) {
  SolveOptions opt;
  opt.threads = 1;
  opt.node_limit = node_limit;
  opt.time_limit = 10;
  return opt;
}

TEST(TwoDeviceRelaxation, OnTwoDevicesItIsTheProblemAndEqualsTheOptimum) {
  std::mt19937 rng(17);
  int compared = 0, lifted = 0;
  for (int i = 0; i < 400 && compared < 60; ++i) {
    const Instance inst = random_multi_stage(rng, 4);
    if (inst.num_devices() != 2) continue;
    const SolveResult exact = solve(inst, {}, exact_options(500'000));
    if (exact.status != SolveResult::Status::kOptimal) continue;
    const TwoDeviceRelaxation r = relax(inst, 0, 1);
    ASSERT_TRUE(r.applicable && r.finished && r.exact) << "instance " << i << ", " << r.nodes << " nodes";
    EXPECT_NEAR(r.bound, exact.makespan, 1e-6) << "instance " << i;
    lifted += r.bound > exact.root_bound + 1e-6 ? 1 : 0;
    ++compared;
  }
  std::printf("[ two-dev  ] %d two-device instances, the relaxation above the root bound on %d\n", compared, lifted);
  EXPECT_GE(compared, 40);
  EXPECT_GT(lifted, 5);
}

TEST(TwoDeviceRelaxation, NeverAboveTheOptimumOrAnySchedule) {
  std::mt19937 rng(23);
  int pairs = 0, proven = 0, above_root = 0, schedules = 0;
  for (int i = 0; i < 300 && proven < 60; ++i) {
    const Instance inst = random_multi_stage(rng, 4);
    if (inst.num_devices() != 3) continue;
    const SolveResult exact = solve(inst, {}, exact_options(300'000));
    if (exact.status == SolveResult::Status::kInfeasible) continue;
    const bool optimal = exact.status == SolveResult::Status::kOptimal;
    proven += optimal ? 1 : 0;
    const std::vector<double> makespans = test_support::feasible_makespans(inst, rng);
    schedules += static_cast<int>(makespans.size());
    for (int a = 0; a < 3; ++a) {
      for (int b = a + 1; b < 3; ++b) {
        const TwoDeviceRelaxation r = relax(inst, a, b);
        if (!r.applicable || !r.finished) continue;
        ++pairs;
        SCOPED_TRACE("instance " + std::to_string(i) + ", devices " + std::to_string(a) + ", " + std::to_string(b));
        if (exact.schedule) EXPECT_LE(r.bound, exact.makespan + 1e-6);
        if (optimal) above_root += r.bound > exact.root_bound + 1e-6 ? 1 : 0;
        for (double ms : makespans) EXPECT_LE(r.bound, ms + 1e-6);
      }
    }
  }
  std::printf("[ two-dev  ] %d pairs bounded on %d proven three-device instances (above the root bound on %d), %d "
              "feasible schedules\n",
              pairs, proven, above_root, schedules);
  EXPECT_GE(proven, 40);
  EXPECT_GT(pairs, 100);
  EXPECT_GT(above_root, 5);  // it bounds something the root's bounds do not
  EXPECT_GT(schedules, 120);
}

// By targets from a known bound (two_device_bound's from > 0) every refuted target is a bound:
// never above the best pair's relaxed optimum, and above the known bound where a pair lifts it.
TEST(TwoDeviceRelaxation, ByTargetsNeverAboveTheRelaxedOptimum) {
  std::mt19937 rng(31);
  int compared = 0, lifted = 0;
  for (int i = 0; i < 300 && compared < 40; ++i) {
    const Instance inst = random_multi_stage(rng, 4);
    if (inst.num_devices() != 3) continue;
    const BoundProblem p(inst);
    const std::vector<double> head = root_heads(inst, p);
    // Every pair's relaxed optimum (none without a relaxed schedule: the instance is infeasible
    // there, and every target is refuted).
    double best = 0;
    bool all_exact = true;
    for (int a = 0; a < 3 && all_exact; ++a) {
      for (int b = a + 1; b < 3 && all_exact; ++b) {
        const TwoDeviceRelaxation r = two_device_relaxation(inst, p, a, b, head, kInf, kNodes);
        all_exact = r.applicable && r.exact;
        best = std::max(best, r.bound);
      }
    }
    if (!all_exact) continue;
    const RootBound root = root_lower_bound(inst, kInf, exact_options(-1));
    for (const double budget : {2'000.0, 200'000.0}) {
      const TwoDeviceBound t = two_device_bound(inst, p, head, kInf, static_cast<std::int64_t>(budget), root.bound);
      SCOPED_TRACE("instance " + std::to_string(i) + ", budget " + std::to_string(budget));
      EXPECT_LE(t.bound, best + 1e-6);
      EXPECT_LE(t.nodes, static_cast<std::int64_t>(budget) + 3);
      lifted += t.bound > root.bound + 1e-6 ? 1 : 0;
    }
    ++compared;
  }
  std::printf("[ two-dev  ] by targets: %d instances, the root bound lifted on %d of %d runs\n", compared, lifted,
              2 * compared);
  EXPECT_GE(compared, 30);
  EXPECT_GT(lifted, 5);
}

TEST(TwoDeviceRelaxation, PrunedSearchFindsWhatThePlainEnumerationFinds) {
  std::mt19937 rng(29);
  int compared = 0;
  for (int i = 0; i < 200 && compared < 25; ++i) {
    const Instance inst = random_multi_stage(rng, 2);
    for (int a = 0; a < inst.num_devices(); ++a) {
      for (int b = a + 1; b < inst.num_devices(); ++b) {
        const TwoDeviceRelaxation plain = relax(inst, a, b, kInf, 3'000'000, false);
        if (!plain.applicable || !plain.finished || !plain.exact) continue;  // (none fits, or too many)
        const TwoDeviceRelaxation pruned = relax(inst, a, b);
        ASSERT_TRUE(pruned.finished);
        EXPECT_NEAR(pruned.bound, plain.bound, 1e-6) << "instance " << i << ", devices " << a << ", " << b;
        EXPECT_LE(pruned.nodes, plain.nodes);
        // A cutoff above the optimum changes nothing; one below it is what it proves.
        const TwoDeviceRelaxation above = relax(inst, a, b, plain.bound + 1.0);
        EXPECT_NEAR(above.bound, plain.bound, 1e-6);
        EXPECT_TRUE(above.exact);
        const TwoDeviceRelaxation below = relax(inst, a, b, plain.bound - 0.5);
        EXPECT_TRUE(below.finished && !below.exact);
        EXPECT_NEAR(below.bound, plain.bound - 0.5 - 1e-7, 1e-9);
        ++compared;
      }
    }
  }
  EXPECT_GE(compared, 20);
}

TEST(TwoDeviceRelaxation, LiftsSeed23SmallLoop01ToItsOptimum) {
  const Instance inst = load_instance(
      (fs::path(OPTPIPE_SOURCE_DIR) / "tests" / "data" / "relaxation" / "seed23-small-loop-01.json").string());
  const BoundProblem p(inst);
  const std::vector<double> head = root_heads(inst, p);
  const TwoDeviceBound best = two_device_bound(inst, p, head, kInf, kNodes);
  std::printf("[ two-dev  ] seed-23 small-loop-01: %.4f ms (devices %d, %d), %d pairs, %lld nodes\n", best.bound,
              best.a, best.b, best.pairs, static_cast<long long>(best.nodes));
  EXPECT_NEAR(best.bound, 30.02, 1e-6);
  EXPECT_EQ(best.a, 2);
  EXPECT_EQ(best.b, 3);
  EXPECT_EQ(best.pairs, 6);
  // The root's other bounds (with the device relaxation) stop at 29.02; the solver proves 30.02.
  SolveOptions opt = exact_options(-1);
  opt.threads = 2;
  EXPECT_NEAR(root_lower_bound(inst, kInf, opt).bound, 29.02, 1e-6);
  const SolveResult exact = solve(inst, {}, opt);
  ASSERT_EQ(exact.status, SolveResult::Status::kOptimal);
  EXPECT_NEAR(exact.makespan, 30.02, 1e-6);
  // From a known bound, by targets: 29.02, 29.05, ... up to where pair (2, 3) has a relaxed
  // schedule below the target, then its exact search below that schedule: the optimum again.
  const TwoDeviceBound targets = two_device_bound(inst, p, head, 30.42, kNodes, 29.02);
  EXPECT_NEAR(targets.bound, 30.02, 1e-6);
  EXPECT_EQ(targets.a, 2);
  EXPECT_EQ(targets.b, 3);
  std::printf("[ two-dev  ] by targets from 29.02: %.4f ms in %lld nodes\n", targets.bound,
              static_cast<long long>(targets.nodes));
  // Each pair gets what the budget left: with too few nodes for any pair, nothing is claimed.
  const TwoDeviceBound starved = two_device_bound(inst, p, head, kInf, 50);
  EXPECT_EQ(starved.bound, 0.0);
  EXPECT_EQ(starved.finished, 0);
  EXPECT_LE(starved.nodes, 51);
}

}  // namespace
}  // namespace optpipe
