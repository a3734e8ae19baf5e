// The memory energy part of the node bound, sampled where it does not raise the bound
// (search/energy_sampling.h): the rule itself, and the search with it against the search that
// computes the part at every node (the same optima on random tight-memory instances, with and
// without offload, where the tree is long enough for the sampling to begin).

#include "search/energy_sampling.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>

#include "model/validator.h"
#include "search/solver.h"
#include "tests/test_util.h"

namespace optpipe {
namespace {

using Status = SolveResult::Status;

TEST(EnergySampling, EveryNodeUntilItHasNotRaisedTheBoundForAWhile) {
  EnergySampling e;
  for (std::int64_t i = 0; i < EnergySampling::kQuiet; ++i) {
    ASSERT_TRUE(e.want()) << i;
    EXPECT_FALSE(e.sampling());
    e.record(true, false);
  }
  EXPECT_TRUE(e.sampling());
  int computed = 0;
  for (std::int64_t i = 0; i < 10 * EnergySampling::kEvery; ++i) {
    if (e.want()) {
      ++computed;
      e.record(true, false);
    } else {
      e.record(false, false);
    }
  }
  EXPECT_EQ(computed, 10);
}

TEST(EnergySampling, ARaiseBringsEveryNodeBack) {
  EnergySampling e;
  for (std::int64_t i = 0; i < EnergySampling::kQuiet; ++i) e.record(true, false);
  ASSERT_TRUE(e.sampling());
  std::int64_t until = 0;
  while (!e.want()) ++until;
  EXPECT_LT(until, EnergySampling::kEvery);
  e.record(true, true);  // the sampled node's part raised its bound
  EXPECT_FALSE(e.sampling());
  for (int i = 0; i < 100; ++i) {
    EXPECT_TRUE(e.want());
    e.record(true, false);
  }
  // And a raise resets the count: kQuiet quiet parts again before sampling.
  for (std::int64_t i = 100; i < EnergySampling::kQuiet; ++i) e.record(true, false);
  EXPECT_TRUE(e.sampling());
}

TEST(EnergySampling, OnlyComputedPartsCount) {
  EnergySampling e;
  // Nodes cut before the part (node_bound stops once the cheaper parts reach the cutoff) say
  // nothing about it.
  for (std::int64_t i = 0; i < 3 * EnergySampling::kQuiet; ++i) e.record(false, false);
  EXPECT_FALSE(e.sampling());
  EXPECT_TRUE(e.want());
}

// The search with the sampling proves the optima the search without it proves. Instances: random,
// 2-4 devices (V, loop and random placements among them), 4-6 microbatches, memory between one
// and about three activations, half of them with offloadable stages; kept where the search is
// long enough for the sampling to begin (twice kQuiet bound calls) and short enough for a
// test.
TEST(EnergySampling, TheSearchProvesTheSameOptimaWithIt) {
  std::mt19937 rng(20261128);
  test_support::RandomInstanceOptions o;
  o.min_devices = 2;
  o.max_devices = 4;
  o.min_microbatches = 4;
  o.max_microbatches = 6;
  o.tight_memory = true;
  int compared = 0, sampled = 0, tried = 0;
  std::int64_t left_out = 0;
  while (compared < 6 && tried < 400) {
    ++tried;
    o.offloadable_probability = tried % 2 == 0 ? 0.0 : 0.5;
    const Instance inst = test_support::random_instance(rng, o);
    SolveOptions with;
    with.threads = 1;
    with.time_limit = 5;
    with.node_limit = 25'000;
    SolveOptions without = with;
    without.energy_sampling = false;
    const SolveResult a = solve(inst, {}, without);
    if (a.status != Status::kOptimal || a.stats.bound_calls < 2 * EnergySampling::kQuiet) continue;
    const SolveResult b = solve(inst, {}, with);
    SCOPED_TRACE(inst.name + " (try " + std::to_string(tried) + ")");
    ++compared;
    ASSERT_EQ(b.status, Status::kOptimal) << b.reason;
    EXPECT_NEAR(b.makespan, a.makespan, 1e-6);
    EXPECT_EQ(a.stats.memory_energy_skipped, 0);
    ASSERT_TRUE(b.schedule.has_value());
    const Validation v = validate(inst, *b.schedule);
    ASSERT_TRUE(v.valid()) << v.violations.front().message;
    EXPECT_NEAR(v.sim->makespan, b.makespan, 1e-6);
    left_out += b.stats.memory_energy_skipped;
    sampled += b.stats.memory_energy_skipped > 0 ? 1 : 0;
  }
  std::printf("[ sampling ] %d instances compared (of %d drawn), %d with parts left out (%lld in all)\n", compared,
              tried, sampled, static_cast<long long>(left_out));
  EXPECT_GE(compared, 6);
  EXPECT_GE(sampled, 1);  // the rule was exercised
}

}  // namespace
}  // namespace optpipe
