// The branch-and-bound in parts (TreeSearch, search/solver.h): a search stopped at its node limit
// and resumed, part after part, until it ends, proves what one search proves.
//
// 1. Random small instances (with and without offload, tight and loose memory), no warm start:
//    stopped every 10 nodes and resumed until no part is left, the status and optimum equal
//    solve()'s, the bound is the makespan, and the schedule simulates to it.
// 2. Each part's node limit counts from the resume, a zero time limit returns at once, and the
//    search stays resumable until it ends.
// 3. A warm start given at the resume becomes the incumbent and cuts what is left.
// 4. After a proof there is nothing to resume: resumable() is false and resume() throws.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "heuristics/registry.h"
#include "model/instance_io.h"
#include "model/simulator.h"
#include "search/solver.h"
#include "tests/sanitized.h"
#include "tests/test_paths.h"
#include "tests/test_util.h"

namespace optpipe {
namespace {

using Status = SolveResult::Status;

std::vector<Schedule> heuristic_schedules(const Instance& inst) {
  std::vector<Schedule> warm;
  for (const HeuristicResult& h : run_all_heuristics(inst).results) {
    if (h.ok()) warm.push_back(*h.schedule);
  }
  return warm;
}

Instance small_v02() {
  return load_instance(std::string(OPTPIPE_SOURCE_DIR) + "/tests/data/relaxation/small-v-02.json");
}

SolveOptions one_thread(std::int64_t node_limit, double time_limit = 60) {
  SolveOptions o;
  o.threads = 1;
  o.time_limit = time_limit;
  o.node_limit = node_limit;
  return o;
}

ResumeOptions part(std::int64_t node_limit, double time_limit = 60) {
  ResumeOptions r;
  r.node_limit = node_limit;
  r.time_limit = time_limit;
  return r;
}

TEST(TreeSearchResume, PartsProveWhatOneSearchProves) {
  std::mt19937 rng(3907);
  test_support::RandomInstanceOptions ro;
  ro.max_devices = 3;
  ro.max_microbatches = 4;
  constexpr std::int64_t kPart = 10;  // nodes a part
  int compared = 0, resumed = 0, parts_total = 0;
  for (int i = 0; i < 40; ++i) {
    ro.tight_memory = i % 2 == 1;
    ro.offloadable_probability = i % 4 >= 2 ? 0.5 : 0.0;
    const Instance inst = test_support::random_instance(rng, ro);
    const std::vector<Schedule> warm;  // none: the tree finds its own incumbents, over more nodes
    const SolveResult direct = solve(inst, warm, one_thread(-1, 5));
    if (direct.status != Status::kOptimal && direct.status != Status::kInfeasible) continue;

    TreeSearch search(inst, one_thread(kPart));
    SolveResult r = search.run(warm);
    int parts = 1;
    while (search.resumable() && parts < 100000) {
      r = search.resume({}, part(kPart));
      ++parts;
    }
    ASSERT_FALSE(search.resumable()) << i;
    ASSERT_EQ(r.status, direct.status) << i << ": " << r.reason;
    ++compared;
    if (parts > 1) ++resumed;
    parts_total += parts;
    if (direct.status != Status::kOptimal) continue;
    EXPECT_NEAR(r.makespan, direct.makespan, 1e-9) << i;
    EXPECT_NEAR(r.bound, r.makespan, 1e-9) << i;
    ASSERT_TRUE(r.schedule) << i;
    EXPECT_NEAR(simulate(inst, *r.schedule).makespan, r.makespan, 1e-9) << i;
  }
  std::printf("[ resume   ] %d instances, %d of them in several parts (%d parts in all)\n", compared, resumed,
              parts_total);
  EXPECT_GE(compared, 30);
  EXPECT_GE(resumed, 10);  // the test is about parts: most instances need more than 60 nodes
}

TEST(TreeSearchResume, EachPartHasItsOwnLimits) {
  const Instance inst = small_v02();  // its proof takes about 100k nodes
  TreeSearch search(inst, one_thread(100));
  const SolveResult first = search.run(heuristic_schedules(inst));
  ASSERT_EQ(first.status, Status::kFeasible) << first.reason;
  EXPECT_EQ(first.stats.nodes, 100);
  ASSERT_TRUE(search.resumable());

  const SolveResult second = search.resume({}, part(250));
  EXPECT_EQ(second.status, Status::kFeasible) << second.reason;
  EXPECT_EQ(second.stats.nodes, 250);  // counted from the resume, not from the start
  EXPECT_EQ(second.reason, "stopped: node limit");
  EXPECT_GE(second.bound, first.bound - 1e-9);  // a bound once proven stays
  EXPECT_LE(second.makespan, first.makespan + 1e-9);
  EXPECT_EQ(second.root_bound, first.root_bound);
  ASSERT_TRUE(search.resumable());

  const SolveResult none = search.resume({}, part(-1, 0.0));
  EXPECT_EQ(none.stats.nodes, 0);
  EXPECT_EQ(none.reason, "stopped: time limit");
  EXPECT_NEAR(none.makespan, second.makespan, 1e-9);
  EXPECT_TRUE(search.resumable());
}

TEST(TreeSearchResume, AWarmStartAtTheResumeBecomesTheIncumbent) {
  SKIP_UNDER_SANITIZERS("the proof takes about 100k search nodes");
  const Instance inst = small_v02();
  const SolveResult optimum = solve(inst, heuristic_schedules(inst), one_thread(-1));
  ASSERT_EQ(optimum.status, Status::kOptimal);
  ASSERT_TRUE(optimum.schedule);
  EXPECT_NEAR(optimum.makespan, 43.77, 1e-6);

  TreeSearch search(inst, one_thread(2000));
  const SolveResult first = search.run(heuristic_schedules(inst));
  ASSERT_TRUE(search.resumable());
  ASSERT_GT(first.makespan, optimum.makespan + 1e-6);  // the first part has not found the optimum

  const SolveResult rest = search.resume({*optimum.schedule}, part(-1));
  ASSERT_EQ(rest.status, Status::kOptimal) << rest.reason;
  EXPECT_NEAR(rest.makespan, optimum.makespan, 1e-9);
  EXPECT_NEAR(rest.warm_start_makespan, optimum.makespan, 1e-9);
  ASSERT_TRUE(rest.schedule);
  EXPECT_NEAR(simulate(inst, *rest.schedule).makespan, optimum.makespan, 1e-9);
  std::printf("[ resume   ] small-v-02: %lld nodes from the root, %lld + %lld in two parts\n",
              static_cast<long long>(optimum.stats.nodes), static_cast<long long>(first.stats.nodes),
              static_cast<long long>(rest.stats.nodes));
}

TEST(TreeSearchResume, NothingToResumeAfterAProof) {
  const Instance inst = load_instance(std::string(OPTPIPE_SOURCE_DIR) + "/instances/tiny-2x3.json");
  TreeSearch search(inst, one_thread(-1));
  const SolveResult r = search.run(heuristic_schedules(inst));
  ASSERT_EQ(r.status, Status::kOptimal);
  EXPECT_FALSE(search.resumable());
  EXPECT_THROW(search.resume({}, part(-1)), std::logic_error);
}

}  // namespace
}  // namespace optpipe
