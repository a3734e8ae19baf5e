// Last tails (bounds/last_tails.h): the choices against a brute force over every order of the
// last two and three microbatches' B's and W's on every stage below, and the tail against the
// makespans of simulated schedules of the spec; then what it adds to the single-stage relaxation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "bounds/bound_problem.h"
#include "bounds/last_tails.h"
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

// Every order of k B's and k W's on one device that keeps each W after its own B and each type
// in microbatch order (op i < k: B(i), k + i: W(i)), by plain enumeration of all sequences.
std::vector<std::vector<int>> device_orders(int k) {
  std::vector<std::vector<int>> out;
  std::vector<int> seq(static_cast<std::size_t>(2 * k));
  for (int i = 0; i < 2 * k; ++i) seq[static_cast<std::size_t>(i)] = i;
  do {
    std::vector<int> pos(static_cast<std::size_t>(2 * k));
    for (int q = 0; q < 2 * k; ++q) pos[static_cast<std::size_t>(seq[static_cast<std::size_t>(q)])] = q;
    bool ok = true;
    for (int i = 0; i < k && ok; ++i) {
      ok = pos[static_cast<std::size_t>(i)] < pos[static_cast<std::size_t>(k + i)];
      if (i + 1 < k) ok = ok && pos[static_cast<std::size_t>(i)] < pos[static_cast<std::size_t>(i + 1)] &&
                          pos[static_cast<std::size_t>(k + i)] < pos[static_cast<std::size_t>(k + i + 1)];
    }
    if (ok) out.push_back(seq);
  } while (std::next_permutation(seq.begin(), seq.end()));
  return out;
}

// The makespan of one choice of order per stage below s (`choice[t]` indexes `orders`), the
// last k B's of s ending at x[0..k-1]: a plain list scheduler, stage s-1 down to 0, each op
// starting when the one before it on its stage ended and its input arrived (B(t, .) from
// B(t+1, .) + comm, W from its B). Nothing else.
double simulate_tail(const BoundProblem& p, int s, int k, const std::vector<std::vector<int>>& orders,
                     const std::vector<int>& choice, const std::vector<double>& x) {
  std::vector<double> in = x, b_end(static_cast<std::size_t>(k));
  double makespan = *std::max_element(x.begin(), x.end());
  for (int t = s - 1; t >= 0; --t) {
    const double b = p.dur[1 * p.S + t], w = p.dur[2 * p.S + t], comm = p.comm_after[t];
    double free = -std::numeric_limits<double>::infinity();
    for (const int op : orders[static_cast<std::size_t>(choice[static_cast<std::size_t>(t)])]) {
      if (op < k) {
        free = std::max(free, in[static_cast<std::size_t>(op)] + comm) + b;
        b_end[static_cast<std::size_t>(op)] = free;
      } else {
        free = std::max(free, b_end[static_cast<std::size_t>(op - k)]) + w;
      }
    }
    makespan = std::max(makespan, free);
    in = b_end;
  }
  return makespan;
}

// The least makespan over every choice of order on every stage below s.
double brute_force_tail(const BoundProblem& p, int s, const std::vector<double>& x) {
  const int k = static_cast<int>(x.size());
  static const std::vector<std::vector<int>> orders_of[4] = {{}, device_orders(1), device_orders(2), device_orders(3)};
  const std::vector<std::vector<int>>& orders = orders_of[k];
  const int n = static_cast<int>(orders.size());
  double best = std::numeric_limits<double>::infinity();
  std::vector<int> choice(static_cast<std::size_t>(s), 0);
  for (;;) {
    best = std::min(best, simulate_tail(p, s, k, orders, choice, x));
    int t = 0;
    while (t < s && ++choice[static_cast<std::size_t>(t)] == n) choice[static_cast<std::size_t>(t++)] = 0;
    if (t == s) break;
  }
  return best;
}

// Random B ends of the last k microbatches of stage s, each at least a B after the one before.
std::vector<double> random_ends(const BoundProblem& p, int s, int k, std::mt19937& rng, bool packed) {
  std::uniform_real_distribution<double> start(0.0, 30.0), gap(0.0, 10.0);
  std::vector<double> x{start(rng)};
  while (static_cast<int>(x.size()) < k) x.push_back(x.back() + p.dur[1 * p.S + s] + (packed ? 0.0 : gap(rng)));
  return x;
}

Instance random_chain(std::mt19937& rng, int max_devices) {
  test_support::RandomInstanceOptions o;
  o.min_devices = 2;
  o.max_devices = max_devices;
  o.min_microbatches = 2;
  o.max_microbatches = 4;
  o.split_probability = 1.0;
  o.allow_multi_stage = false;  // one stage per device: at most 5^5 choices for the brute force
  Instance inst = test_support::random_instance(rng, o);
  std::uniform_real_distribution<double> comm(0.0, 2.0);
  for (double& c : inst.comm) c = comm(rng);
  return inst;
}

// last_tail is exactly the least makespan over every order of every stage below, for the last
// two and the last three microbatches; the three's is never below the two's.
TEST(LastTails, EqualTheBruteForceOverEveryOrderOfTheStagesBelow) {
  std::mt19937 rng(7);
  int cases = 0, above_static = 0, above_two = 0;
  for (int i = 0; i < 200; ++i) {
    const Instance inst = random_chain(rng, 6);
    const BoundProblem p(inst);
    for (int s = 1; s < p.S; ++s) {
      const std::vector<double> x = random_ends(p, s, 3, rng, i % 3 == 0);
      const LastTails two = last_tail_choices(p, s, 2), three = last_tail_choices(p, s, 3);
      ASSERT_EQ(two.k, 2);
      ASSERT_EQ(three.k, std::min(3, p.m));
      const std::vector<double> x2(x.begin() + 1, x.end());
      const double got2 = last_tail(two, x2.data());
      EXPECT_NEAR(got2, brute_force_tail(p, s, x2), 1e-9) << "instance " << i << ", stage " << s;
      if (three.k == 3) {
        const double got3 = last_tail(three, x.data());
        EXPECT_NEAR(got3, brute_force_tail(p, s, x), 1e-9) << "instance " << i << ", stage " << s;
        EXPECT_GE(got3, got2 - 1e-9);
        above_two += got3 > got2 + 1e-9 ? 1 : 0;
      }
      above_static += got2 > x.back() + p.tail[1 * p.S + s] + 1e-9 ? 1 : 0;
      ++cases;
    }
  }
  std::printf("[ tails    ] %d stages, %d above the last B's static tail, %d higher with three\n", cases,
              above_static, above_two);
  EXPECT_GT(cases, 400);
  EXPECT_GT(above_static, 50);
  EXPECT_GT(above_two, 20);
}

// Past `max_states` partial choices the rest merge into their elementwise minimum: the tail
// stays between the last B's chain to stage 0 and the brute force.
TEST(LastTails, StayBelowTheBruteForceWhenChoicesMerge) {
  std::mt19937 rng(11);
  int below = 0, cases = 0;
  for (int i = 0; i < 300; ++i) {
    const Instance inst = random_chain(rng, 6);
    const BoundProblem p(inst);
    const int s = p.S - 1, k = std::min(3, p.m);
    const LastTails all = last_tail_choices(p, s, k), few = last_tail_choices(p, s, k, 1);
    const std::vector<double> x = random_ends(p, s, k, rng, false);
    const double want = brute_force_tail(p, s, x);
    EXPECT_NEAR(last_tail(all, x.data()), want, 1e-9) << "instance " << i;
    EXPECT_EQ(few.choices.size(), 1u);
    EXPECT_LE(last_tail(few, x.data()), want + 1e-9) << "instance " << i;
    // The last B's chain to stage 0 and the W there (its static tail less its own stage's W).
    const double chain = p.comm_after[s - 1] + p.dur[1 * p.S + s - 1] + p.tail[1 * p.S + s - 1];
    EXPECT_GE(last_tail(few, x.data()), x.back() + chain - 1e-9) << "instance " << i;
    below += last_tail(few, x.data()) < want - 1e-9 ? 1 : 0;
    ++cases;
  }
  std::printf("[ tails    ] %d of %d lower with every choice merged into one\n", below, cases);
  EXPECT_GT(below, 0);  // the merge lost something somewhere: it was exercised
}

// No split backward, stage 0, one microbatch: nothing to add.
TEST(LastTails, NoChoicesWhereThereIsNothingBelow) {
  std::mt19937 rng(3);
  const Instance inst = random_chain(rng, 4);
  const BoundProblem p(inst);
  EXPECT_TRUE(last_tail_choices(p, 0).empty());
  const double x[3] = {1.0, 2.0, 3.0};
  EXPECT_EQ(last_tail(LastTails{}, x), -std::numeric_limits<double>::infinity());
  Instance unsplit = inst;
  unsplit.split_backward = false;
  EXPECT_TRUE(last_tail_choices(BoundProblem(unsplit), unsplit.num_stages() - 1).empty());
}

// Every simulated schedule of the spec (random ones and the heuristics', with memory, offloads and
// shared devices) ends no earlier than the tail of its last three B's at every stage.
TEST(LastTails, EverySimulatedScheduleEndsAfterTheTail) {
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
        const LastTails tails = last_tail_choices(p, s);
        std::vector<double> x;
        for (int j = p.m - tails.k; j < p.m; ++j) x.push_back(t.end_of(p, 1, s, j));
        const double tail = last_tail(tails, x.data());
        EXPECT_LE(tail, t.makespan + 1e-6) << "instance " << i << ", stage " << s;
        tight += tail > x.back() + p.tail[1 * p.S + s] + 1e-6 ? 1 : 0;
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
// relaxation ends at 51.11 with the last B's static tail alone, and at the optimum with the last
// microbatches' tails; and the solver, which searches the root's stages again with them, proves it at the root.
TEST(LastTails, RaiseOffloadRandom10sStageOneRelaxationToTheOptimum) {
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
  std::printf("[ tails    ] offload-random-10 stage 1: %.4f ms plain (%lld nodes), %.4f with the last tails (%lld)\n",
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
  EXPECT_GE(r.stats.last_tail_raised, 1);
}

// offload-random-18 (seed 11; CP-SAT proves 42.73 ms): stage 2's relaxation is 40.89 with the
// static tail, 42.17 with the last two microbatches' tails and 42.73 with the last three's.
TEST(LastTails, ThreeMicrobatchesRaiseOffloadRandom18sStageTwoToTheOptimum) {
  const Instance inst = load_instance(std::string(OPTPIPE_SOURCE_DIR) + "/tests/data/relaxation/offload-random-18.json");
  const BoundProblem p(inst);
  const std::vector<double> head = test_support::root_heads(inst, p);
  const SingleStageRelaxation plain = single_stage_relaxation(inst, p, 2, head, 1e9, 2'000'000);
  const SingleStageRelaxation with = single_stage_relaxation(inst, p, 2, head, 1e9, 2'000'000, 0, true,
                                                             StartRules::kFree, true,
                                                             -std::numeric_limits<double>::infinity(), nullptr, true);
  ASSERT_TRUE(plain.finished);
  ASSERT_TRUE(with.finished);
  EXPECT_NEAR(plain.bound, 40.89, 1e-5);
  EXPECT_NEAR(with.bound, 42.73, 1e-5);
}

}  // namespace
}  // namespace optpipe
