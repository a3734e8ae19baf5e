// The bottleneck bound (viz/bottleneck.h): head + busy of the busiest device. By hand on a
// uniform pipeline; never above a schedule's makespan on random instances and schedules, nor
// above the brute force's optimum on tiny ones; and the sentence says whether a schedule meets
// it.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "model/simulator.h"
#include "tests/brute_force.h"
#include "tests/test_util.h"
#include "viz/bottleneck.h"

namespace optpipe {
namespace {

// 3 devices, 4 microbatches, F 1, B 2, W 1, comm 0.5: every device computes 4 x 4 = 16 ms; the
// last one cannot start before F0 + comm + F1 + comm = 3 ms, so no schedule ends before 19.
TEST(BottleneckBound, ByHandOnAUniformPipeline) {
  const Instance inst = test_support::uniform_instance(3, 4, 1, 2, 1, 0.5);
  const BottleneckBound b = bottleneck_bound(inst);
  EXPECT_EQ(b.device, 2);
  EXPECT_DOUBLE_EQ(b.busy, 16);
  EXPECT_DOUBLE_EQ(b.head, 3);
  EXPECT_DOUBLE_EQ(b.bound(), 19);
}

TEST(BottleneckBound, NeverAboveAMakespan) {
  std::mt19937 rng(2026);
  int feasible = 0, proven = 0;
  for (int k = 0; k < 400; ++k) {
    test_support::RandomInstanceOptions o;
    o.max_devices = k % 4 == 0 ? 2 : 4;
    o.max_microbatches = k % 4 == 0 ? 2 : 6;
    const Instance inst = test_support::random_instance(rng, o);
    const double bound = bottleneck_bound(inst).bound();
    for (int t = 0; t < 3; ++t) {
      const SimResult sim = simulate(inst, test_support::random_valid_schedule(inst, rng));
      if (!sim.feasible) continue;
      ++feasible;
      EXPECT_LE(bound, sim.makespan + 1e-9) << "instance " << k;
    }
    if (k % 4 == 0 && test_support::count_schedules(inst, 20001) <= 20000) {
      const test_support::BruteForceResult bf = test_support::brute_force_optimum(inst, 20000);
      if (!bf.feasible) continue;
      ++proven;
      EXPECT_LE(bound, bf.optimum + 1e-9) << "instance " << k;
    }
  }
  EXPECT_GE(feasible, 300);
  EXPECT_GE(proven, 30);
}

// A schedule that meets the bound is told so; one that does not is told by how much.
TEST(BottleneckBound, TheSentenceSaysWhereTheScheduleStands) {
  const Instance inst = test_support::uniform_instance(2, 2, 1, 1, 1);
  // Device 1 works 6 ms after a 1 ms head: 7 ms at best.
  const Schedule tight = test_support::lists(inst, {{"F0.0", "F0.1", "B0.0", "W0.0", "B0.1", "W0.1"},
                                                    {"F1.0", "B1.0", "F1.1", "B1.1", "W1.0", "W1.1"}});
  const SimResult at = simulate(inst, tight);
  ASSERT_TRUE(at.feasible) << at.reason;
  ASSERT_DOUBLE_EQ(at.makespan, 7);
  const std::string meets = explain_bottleneck(inst, at);
  EXPECT_NE(meets.find("bottleneck: device 1 (stage 1) computes 6.000 ms and cannot start before 1.000 ms"),
            std::string::npos)
      << meets;
  EXPECT_NE(meets.find("this one ends there"), std::string::npos) << meets;
  const Schedule slow = test_support::lists(inst, {{"F0.0", "B0.0", "W0.0", "F0.1", "B0.1", "W0.1"},
                                                   {"F1.0", "B1.0", "W1.0", "F1.1", "B1.1", "W1.1"}});
  const SimResult late = simulate(inst, slow);
  ASSERT_TRUE(late.feasible) << late.reason;
  ASSERT_GT(late.makespan, 7.5);
  EXPECT_NE(explain_bottleneck(inst, late).find("later: order, memory or transfers"), std::string::npos);
  SimResult failed;
  failed.feasible = false;
  EXPECT_EQ(explain_bottleneck(inst, failed), "");
}

}  // namespace
}  // namespace optpipe
