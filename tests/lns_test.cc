// Large neighbourhood search (search/lns.h) and the solver's neighbourhood mode.
#include "search/lns.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <optional>
#include <random>
#include <vector>

#include "search/solver.h"
#include "model/simulator.h"
#include "model/validator.h"
#include "heuristics/registry.h"
#include "tests/test_util.h"

namespace optpipe {
namespace {

SimOptions quiet() {
  const SimOptions o = SimOptions::quiet();
  return o;
}

// The worst feasible heuristic schedule: room to improve.
std::optional<Schedule> worst_heuristic(const Instance& inst) {
  std::optional<Schedule> worst;
  double worst_makespan = -1;
  for (const HeuristicResult& r : run_all_heuristics(inst, false).results) {
    if (!r.ok()) continue;
    if (r.sim.makespan > worst_makespan) {
      worst_makespan = r.sim.makespan;
      worst = *r.schedule;
    }
  }
  return worst;
}

TEST(Lns, ImprovesWorstHeuristicsAndStaysValid) {
  std::mt19937 rng(3);
  int runs = 0, improved = 0;
  for (int i = 0; i < 30; ++i) {
    test_support::RandomInstanceOptions o;
    o.min_devices = 2;
    o.max_devices = 4;
    o.min_microbatches = 4;
    o.max_microbatches = 6;
    o.tight_memory = i % 2 == 0;
    const Instance inst = test_support::random_instance(rng, o);
    const std::optional<Schedule> start = worst_heuristic(inst);
    if (!start) continue;
    const double before = simulate(inst, *start, quiet()).makespan;
    LnsStats st;
    LnsOptions lo;
    lo.nodes_per_window = 2000;
    const Schedule after = improve_by_lns(inst, *start, lo, &st);
    SCOPED_TRACE("instance " + std::to_string(i));
    ASSERT_TRUE(check_structure(inst, after).empty());
    const SimResult r = simulate(inst, after, quiet());
    ASSERT_TRUE(r.feasible) << r.reason;
    EXPECT_NEAR(r.makespan, st.final_makespan, 1e-9);
    EXPECT_NEAR(before, st.start_makespan, 1e-9);
    EXPECT_LE(r.makespan, before + 1e-9);
    ++runs;
    if (r.makespan < before - 1e-9) ++improved;
  }
  std::printf("[ lns      ] improved %d of %d worst heuristic schedules\n", improved, runs);
  EXPECT_GT(runs, 20);
  EXPECT_GT(improved, runs / 3);
}

// The actions of fixed microbatches, in list order per device.
std::vector<std::vector<Action>> fixed_part(const Schedule& sch, const std::vector<char>& free_mb) {
  std::vector<std::vector<Action>> out(sch.devices.size());
  for (std::size_t d = 0; d < sch.devices.size(); ++d) {
    for (const Action& a : sch.devices[d]) {
      if (!free_mb[a.mb]) out[d].push_back(a);
    }
  }
  return out;
}

TEST(Lns, NeighbourhoodSearchKeepsTheFixedMicrobatchesAsTheyWere) {
  std::mt19937 rng(8);
  int checked = 0, changed = 0;
  for (int i = 0; i < 40; ++i) {
    test_support::RandomInstanceOptions o;
    o.min_devices = 2;
    o.max_devices = 3;
    o.min_microbatches = 3;
    o.max_microbatches = 5;
    o.tight_memory = i % 2 == 0;
    const Instance inst = test_support::random_instance(rng, o);
    const std::optional<Schedule> start = worst_heuristic(inst);
    if (!start) continue;
    Neighbourhood nb;
    nb.guide = *start;
    nb.free_microbatch.assign(static_cast<std::size_t>(inst.microbatches), 0);
    nb.free_microbatch[std::uniform_int_distribution<int>(0, inst.microbatches - 1)(rng)] = 1;
    SolveOptions so;
    so.threads = 1;
    so.node_limit = 5000;
    so.neighbourhood = &nb;
    const SolveResult r = solve(inst, {*start}, so);
    SCOPED_TRACE("instance " + std::to_string(i));
    ASSERT_TRUE(r.schedule.has_value());
    EXPECT_NE(r.status, SolveResult::Status::kOptimal);  // a neighbourhood proves nothing globally
    EXPECT_EQ(fixed_part(*r.schedule, nb.free_microbatch), fixed_part(*start, nb.free_microbatch));
    ++checked;
    if (r.schedule->devices != start->devices) ++changed;
  }
  std::printf("[ lns      ] %d neighbourhood searches, %d moved the free microbatch\n", checked, changed);
  EXPECT_GT(checked, 30);
  EXPECT_GT(changed, 5);
}

TEST(Lns, SolverResultIsTheSameWithAndWithoutItWhenProven) {
  std::mt19937 rng(21);
  int proven = 0;
  for (int i = 0; i < 20; ++i) {
    test_support::RandomInstanceOptions o;
    o.max_devices = 3;
    o.max_microbatches = 4;
    o.tight_memory = i % 2 == 0;
    const Instance inst = test_support::random_instance(rng, o);
    const std::optional<Schedule> start = worst_heuristic(inst);
    if (!start) continue;
    SolveOptions so;
    so.threads = 1;
    so.node_limit = 30000;
    so.lns_time_share = 0.5;
    const SolveResult with = solve(inst, {*start}, so);
    so.lns_time_share = 0;
    const SolveResult without = solve(inst, {*start}, so);
    if (with.status != SolveResult::Status::kOptimal || without.status != SolveResult::Status::kOptimal) continue;
    SCOPED_TRACE("instance " + std::to_string(i));
    EXPECT_NEAR(with.makespan, without.makespan, 1e-9);
    EXPECT_EQ(without.stats.lns_repairs, 0);
    ++proven;
  }
  EXPECT_GT(proven, 10);
}

}  // namespace
}  // namespace optpipe
