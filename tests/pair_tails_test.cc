// Pair tails (bounds/pair_tails.h): the choices against a brute force over every order of the
// last two microbatches' B and W on every stage below, and the tail against the makespans of
// simulated schedules of the spec; then what it adds to the single-stage relaxation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "bounds/bound_problem.h"
#include "bounds/pair_tails.h"
#include "bounds/single_stage_relaxation.h"
#include "heuristics/registry.h"
#include "model/instance_io.h"
#include "model/simulator.h"
#include "search/solver.h"
#include "tests/root_heads.h"
#include "tests/test_paths.h"
#include "tests/test_util.h"
#include "tests/timed_schedules.h"

namespace optpipe {
namespace {

// The makespan of one order of the ops of microbatches j = m-2 and k = m-1 on the stages below
// s, B(s, j) ending at x and B(s, k) at y: on stage t the list is B(t, j), then W(t, j) and
// B(t, k) in the order `w_first[t]` says, then W(t, k) (W(t, k) last: FIFO per type). A plain
// list scheduler, stage s-1 down to 0: each op starts when the one before it on its stage ended
// and its input arrived (B(t, .) from B(t+1, .) + comm, W from its B). Nothing else.
double simulate_tail(const BoundProblem& p, int s, const std::vector<char>& w_first, double x, double y) {
  double in_j = x, in_k = y, makespan = std::max(x, y);
  for (int t = s - 1; t >= 0; --t) {
    const double b = p.dur[1 * p.S + t], w = p.dur[2 * p.S + t], comm = p.comm_after[t];
    double free = -std::numeric_limits<double>::infinity();
    auto run = [&](double input, double d) {
      free = std::max(free, input) + d;
      return free;
    };
    const double bj = run(in_j + comm, b);
    double bk;
    if (w_first[static_cast<std::size_t>(t)]) {
      run(bj, w);
      bk = run(in_k + comm, b);
      run(bk, w);
    } else {
      bk = run(in_k + comm, b);
      run(bj, w);
      run(bk, w);
    }
    makespan = std::max(makespan, free);
    in_j = bj;
    in_k = bk;
  }
  return makespan;
}

// The least makespan over every choice of order on every stage below s.
double brute_force_tail(const BoundProblem& p, int s, double x, double y) {
  double best = std::numeric_limits<double>::infinity();
  for (int mask = 0; mask < (1 << s); ++mask) {
    std::vector<char> w_first(static_cast<std::size_t>(s), 0);
    for (int t = 0; t < s; ++t) w_first[static_cast<std::size_t>(t)] = (mask >> t) & 1;
    best = std::min(best, simulate_tail(p, s, w_first, x, y));
  }
  return best;
}

Instance random_chain(std::mt19937& rng, int max_devices) {
  test_support::RandomInstanceOptions o;
  o.min_devices = 2;
  o.max_devices = max_devices;
  o.min_microbatches = 2;
  o.max_microbatches = 4;
  o.split_probability = 1.0;
  Instance inst = test_support::random_instance(rng, o);
  std::uniform_real_distribution<double> comm(0.0, 2.0);
  for (double& c : inst.comm) c = comm(rng);
  return inst;
}

// pair_tail is exactly the least makespan over the 2^s orders of the stages below.
TEST(PairTails, EqualTheBruteForceOverEveryOrderOfTheStagesBelow) {
  std::mt19937 rng(7);
  int cases = 0, above_static = 0;
  for (int i = 0; i < 300; ++i) {
    const Instance inst = random_chain(rng, 7);
    const BoundProblem p(inst);
    for (int s = 1; s < p.S; ++s) {
      const std::vector<PairTailChoice> choices = pair_tail_choices(p, s);
      ASSERT_FALSE(choices.empty());
      std::uniform_real_distribution<double> start(0.0, 30.0), gap(0.0, 10.0);
      const double x = start(rng), y = x + p.dur[1 * p.S + s] + (i % 3 == 0 ? 0.0 : gap(rng));
      const double want = brute_force_tail(p, s, x, y);
      const double got = pair_tail(choices, x, y);
      EXPECT_NEAR(got, want, 1e-9) << "instance " << i << ", stage " << s << ", x " << x << ", y " << y;
      // More than the static tail of the last B alone somewhere.
      above_static += got > y + p.tail[1 * p.S + s] + 1e-9 ? 1 : 0;
      ++cases;
    }
  }
  std::printf("[ tails    ] %d stages, %d above the last B's static tail\n", cases, above_static);
  EXPECT_GT(cases, 700);
  EXPECT_GT(above_static, 100);
}

// Past `max_states` partial choices the rest merge into their elementwise minimum: the tail
// stays between the last B's static tail and the brute force.
TEST(PairTails, StayBelowTheBruteForceWhenChoicesMerge) {
  std::mt19937 rng(11);
  int below = 0, cases = 0;
  for (int i = 0; i < 400; ++i) {
    const Instance inst = random_chain(rng, 8);
    const BoundProblem p(inst);
    const int s = p.S - 1;
    const std::vector<PairTailChoice> all = pair_tail_choices(p, s), few = pair_tail_choices(p, s, 1);
    std::uniform_real_distribution<double> gap(0.0, 10.0);
    const double x = 5.0, y = x + p.dur[1 * p.S + s] + gap(rng);
    const double want = brute_force_tail(p, s, x, y);
    EXPECT_NEAR(pair_tail(all, x, y), want, 1e-9) << "instance " << i;
    EXPECT_EQ(few.size(), 1u);
    EXPECT_LE(pair_tail(few, x, y), want + 1e-9) << "instance " << i;
    EXPECT_GE(pair_tail(few, x, y), y + p.tail[1 * p.S + s] - 1e-9) << "instance " << i;
    below += pair_tail(few, x, y) < want - 1e-9 ? 1 : 0;
    ++cases;
  }
  std::printf("[ tails    ] %d of %d lower with every choice merged into one\n", below, cases);
  EXPECT_GT(below, 0);  // the merge lost something somewhere: it was exercised
}

// No split backward, stage 0, one microbatch: nothing to add.
TEST(PairTails, NoChoicesWhereThereIsNoPairBelow) {
  std::mt19937 rng(3);
  const Instance inst = random_chain(rng, 4);
  const BoundProblem p(inst);
  EXPECT_TRUE(pair_tail_choices(p, 0).empty());
  EXPECT_EQ(pair_tail({}, 1.0, 2.0), -std::numeric_limits<double>::infinity());
  Instance unsplit = inst;
  unsplit.split_backward = false;
  EXPECT_TRUE(pair_tail_choices(BoundProblem(unsplit), unsplit.num_stages() - 1).empty());
}

// Every simulated schedule of the spec (random ones and the heuristics', with memory, offloads and
// shared devices) ends no earlier than the pair tail of its last two B's at every stage.
TEST(PairTails, EverySimulatedScheduleEndsAfterTheTail) {
  std::mt19937 rng(19);
  int checks = 0, tight = 0, schedules = 0;
  for (int i = 0; i < 200; ++i) {
    test_support::RandomInstanceOptions o;
    o.max_devices = 5;
    o.min_microbatches = 2;
    o.max_microbatches = 6;
    o.split_probability = 1.0;
    o.tight_memory = i % 2 == 0;
    const Instance inst = test_support::random_instance(rng, o);
    const BoundProblem p(inst);
    for (const test_support::TimedSchedule& t : test_support::timed_schedules(inst, p, rng)) {
      ++schedules;
      for (int s = 1; s < p.S; ++s) {
        const double x = t.end_of(p, 1, s, p.m - 2), y = t.end_of(p, 1, s, p.m - 1);
        const double tail = pair_tail(pair_tail_choices(p, s), x, y);
        EXPECT_LE(tail, t.makespan + 1e-6) << "instance " << i << ", stage " << s;
        tight += tail > y + p.tail[1 * p.S + s] + 1e-6 ? 1 : 0;
        ++checks;
      }
    }
  }
  std::printf("[ tails    ] %d stages in %d schedules, %d above the static tail\n", checks, schedules, tight);
  EXPECT_GT(schedules, 300);
  EXPECT_GT(checks, 1000);
  EXPECT_GT(tight, 100);
}

// offload-random-10 (random_offload.py, seed 11), whose optimum 51.18 ms CP-SAT proves: stage 1's
// relaxation ends at 51.11 with the last B's static tail alone, and at the optimum with the pair
// tails; and the solver, which searches the root's stages again with them, proves it at the root.
TEST(PairTails, RaiseOffloadRandom10sStageOneRelaxationToTheOptimum) {
  const Instance inst = load_instance(std::string(OPTPIPE_SOURCE_DIR) + "/tests/data/relaxation/offload-random-10.json");
  const BoundProblem p(inst);
  const std::vector<double> head = test_support::root_heads(inst, p);
  auto relax = [&](bool tails) {
    return single_stage_relaxation(inst, p, 1, head, 1e9, 2'000'000, 0, true, StartRules::kFree, true,
                                   -std::numeric_limits<double>::infinity(), nullptr, tails);
  };
  const SingleStageRelaxation plain = relax(false), with = relax(true);
  ASSERT_TRUE(plain.finished);
  ASSERT_TRUE(with.finished);
  EXPECT_NEAR(plain.bound, 51.11, 1e-5);
  EXPECT_NEAR(with.bound, 51.18, 1e-5);
  std::printf("[ tails    ] offload-random-10 stage 1: %.4f ms plain (%lld nodes), %.4f with the pair tails (%lld)\n",
              plain.bound, static_cast<long long>(plain.nodes), with.bound, static_cast<long long>(with.nodes));

  std::vector<Schedule> warm;
  for (const HeuristicResult& h : run_all_heuristics(inst).results) {
    if (h.ok()) warm.push_back(*h.schedule);
  }
  SolveOptions opt;
  opt.threads = 1;
  opt.node_limit = 100'000;
  const SolveResult r = solve(inst, warm, opt);
  EXPECT_GE(r.bound, 51.18 - 1e-6);
  EXPECT_GE(r.stats.pair_tail_raised, 1);
}

}  // namespace
}  // namespace optpipe
