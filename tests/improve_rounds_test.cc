// Local search in rounds (heuristics/improve_rounds.h): one round of one task is the plain local
// search with the same seed and budget; more rounds never lose the best; the result does not
// depend on the thread count.
#include <gtest/gtest.h>

#include "heuristics/improve_rounds.h"
#include "heuristics/local_search.h"
#include "heuristics/registry.h"
#include "model/instance_io.h"
#include "model/simulator.h"
#include "model/validator.h"
#include "tests/test_paths.h"

namespace optpipe {
namespace {

Instance tight() { return load_instance(std::string(OPTPIPE_SOURCE_DIR) + "/instances/gpt-8x24-tight.json"); }

Schedule start(const Instance& inst, const char* name) { return *run_heuristic(*find_heuristic(name), inst).schedule; }

TEST(ImproveRounds, OneTaskOneRoundIsThePlainLocalSearch) {
  const Instance inst = tight();
  const Schedule s = start(inst, "zb-greedy");
  RoundsOptions ro;
  ro.tasks = 1;
  ro.pool = 1;
  ro.evaluations_per_task = 400;
  ro.max_evaluations = 400;
  ro.seed = 5;
  RoundsStats st;
  const Schedule a = improve_in_rounds(inst, {s}, ro, &st);
  LocalSearchOptions lo;
  lo.max_evaluations = 400;
  lo.seed = 5;
  const Schedule b = improve_schedule(inst, s, lo);
  EXPECT_EQ(st.rounds, 1);
  EXPECT_EQ(a.devices, b.devices);
}

TEST(ImproveRounds, NeverWorseThanItsStartsAndTheSameOnAnyThreadCount) {
  const Instance inst = tight();
  const std::vector<Schedule> starts{start(inst, "zb-greedy"), start(inst, "pipe-offload"), start(inst, "ada-offload")};
  double best_start = 1e300;
  for (const Schedule& s : starts) best_start = std::min(best_start, simulate(inst, s, SimOptions::quiet()).makespan);
  std::vector<std::vector<std::vector<Action>>> results;
  for (int threads : {1, 2, 3}) {
    RoundsOptions ro;
    ro.evaluations_per_task = 150;
    ro.max_evaluations = 1800;  // 3 rounds of 4 tasks
    ro.threads = threads;
    RoundsStats st;
    const Schedule r = improve_in_rounds(inst, starts, ro, &st);
    EXPECT_EQ(st.rounds, 3);
    EXPECT_TRUE(check_structure(inst, r).empty());
    const SimResult sim = simulate(inst, r, SimOptions::quiet());
    ASSERT_TRUE(sim.feasible);
    EXPECT_NEAR(sim.makespan, st.final_makespan, 1e-9);
    EXPECT_LE(st.final_makespan, best_start + 1e-9);
    EXPECT_LE(st.final_makespan, st.start_makespan);
    results.push_back(r.devices);
  }
  EXPECT_EQ(results[0], results[1]);
  EXPECT_EQ(results[0], results[2]);
}

// From kSwapOps and kUntriedFirstOps compute ops on the searches also swap offloads and try the
// untried moves first: still the same schedule with 1 and 2 threads (GPT-3 14.6B on 16 GPUs x
// 48 microbatches at 8 activations, 2304 compute ops, from PipeOffload's and ZB greedy's lists).
TEST(ImproveRounds, TheSameOnAnyThreadCountWithTheMovesOfLargeInstances) {
  const Instance inst = load_instance(std::string(OPTPIPE_SOURCE_DIR) + "/instances/generated/paper-gpt3-14.6b-16x48-8act.json");
  const int ops = inst.num_compute_ops();
  ASSERT_TRUE(default_offload_swaps(ops) && default_untried_first(ops)) << ops;
  const std::vector<Schedule> starts{start(inst, "pipe-offload"), start(inst, "zb-greedy")};
  std::vector<std::vector<std::vector<Action>>> results;
  for (int threads : {1, 2}) {
    RoundsOptions ro;
    ro.evaluations_per_task = 60;
    ro.max_evaluations = 480;  // 2 rounds of 4 tasks
    ro.threads = threads;
    RoundsStats st;
    const Schedule r = improve_in_rounds(inst, starts, ro, &st);
    EXPECT_EQ(st.rounds, 2);
    EXPECT_TRUE(check_structure(inst, r).empty());
    EXPECT_LT(st.final_makespan, st.start_makespan);  // the searches do something in that budget
    results.push_back(r.devices);
  }
  EXPECT_EQ(results[0], results[1]);
}

// on_new_best gets each round's new best schedule with its makespan, strictly shorter each time,
// and the last is the result; on_improve sees the same makespans.
TEST(ImproveRounds, ReportsEachNewBestSchedule) {
  const Instance inst = tight();
  RoundsOptions ro;
  ro.tasks = 2;
  ro.threads = 1;
  ro.evaluations_per_task = 300;
  ro.max_evaluations = 3000;
  std::vector<double> reported, improved;
  ro.on_new_best = [&](const Schedule& s, double makespan) {
    EXPECT_NEAR(simulate(inst, s, SimOptions::quiet()).makespan, makespan, 1e-9);
    if (!reported.empty()) EXPECT_LT(makespan, reported.back());
    reported.push_back(makespan);
  };
  ro.on_improve = [&](double, double makespan) { improved.push_back(makespan); };
  RoundsStats st;
  const Schedule r = improve_in_rounds(inst, {start(inst, "pipe-offload")}, ro, &st);
  ASSERT_FALSE(reported.empty()) << "pipe-offload is far from the best on gpt-8x24-tight";
  EXPECT_EQ(reported, improved);
  EXPECT_NEAR(reported.back(), st.final_makespan, 1e-9);
  EXPECT_NEAR(simulate(inst, r, SimOptions::quiet()).makespan, st.final_makespan, 1e-9);
}

TEST(ImproveRounds, NoUsableStartGivesAnEmptySchedule) {
  const Instance inst = tight();
  Schedule broken;
  broken.devices.resize(static_cast<std::size_t>(inst.num_devices()));
  EXPECT_TRUE(improve_in_rounds(inst, {broken}).devices.empty());
}

}  // namespace
}  // namespace optpipe
