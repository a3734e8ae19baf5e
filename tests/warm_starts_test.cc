// Warm starts (heuristics/warm_starts.h): every heuristic schedule plus the best few improved by
// local search, valid, never worse than where they started, and the same on every call.
#include "heuristics/warm_starts.h"

#include <gtest/gtest.h>

#include <chrono>
#include <random>

#include "engine/simulator.h"
#include "engine/validator.h"
#include "tests/test_util.h"

namespace optpipe {
namespace {

TEST(WarmStarts, ImprovedStartsAreValidNoWorseAndDeterministic) {
  std::mt19937 rng(17);
  int improved = 0, runs = 0;
  SimOptions quiet;
  quiet.record_timeline = false;
  quiet.record_memory = false;
  for (int i = 0; i < 12; ++i) {
    testing::RandomInstanceOptions o;
    o.min_devices = 2;
    o.max_microbatches = 5;
    o.tight_memory = i % 2 == 0;
    const Instance inst = testing::random_instance(rng, o);
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
  const Instance inst = testing::uniform_instance(3, 6, 1, 1, 1);
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
  const Instance inst = testing::uniform_instance(4, 12, 1, 1.3, 0.7);
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

TEST(WarmStarts, BudgetGrowsWithTheTimeLimitWithinItsRange) {
  EXPECT_EQ(local_search_budget(10), 20000);
  EXPECT_EQ(local_search_budget(0), 1000);
  EXPECT_EQ(local_search_budget(1e6), 200000);
  EXPECT_LT(local_search_budget(5), local_search_budget(30));
}

}  // namespace
}  // namespace optpipe
