// Pair releases (bounds/pair_releases.h): the orders' constants against a brute force
// over every order of the two microbatches' ops on every later stage, and their releases
// against simulated schedules of the spec.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "bounds/bound_problem.h"
#include "bounds/pair_releases.h"
#include "model/simulator.h"
#include "heuristics/registry.h"
#include "tests/test_util.h"
#include "tests/timed_schedules.h"

namespace optpipe {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// The release pair of one order of the ops of microbatches j and k on the stages after s: on
// stage t the list is F(t, j), then B(t, j) and F(t, k) in the order `b_first[t]` says, then
// B(t, k). A plain list scheduler: each stage runs its list in order, an op starting when the
// one before it ended and its input arrived (F(s+1, .) at x or y, F(t, .) from F(t-1, .) + comm,
// the last stage's B from its F, B(t, .) from B(t+1, .) + comm). Nothing else. Returns false when
// the lists deadlock.
bool simulate_pair(const BoundProblem& p, int s, const std::vector<char>& b_first, double x, double y,
                   PairRelease& out) {
  const int first = s + 1, last = p.S - 1;
  struct Op {
    int type, mb;  // type 0 F, 1 B; mb 0 j, 1 k
  };
  std::vector<std::vector<Op>> list(static_cast<std::size_t>(p.S));
  for (int t = first; t <= last; ++t) {
    auto& l = list[static_cast<std::size_t>(t)];
    l.push_back({0, 0});
    if (b_first[static_cast<std::size_t>(t)]) {
      l.push_back({1, 0});
      l.push_back({0, 1});
    } else {
      l.push_back({0, 1});
      l.push_back({1, 0});
    }
    l.push_back({1, 1});
  }
  const double nan = std::nan("");
  // end[type][mb][t]
  std::vector<double> end(static_cast<std::size_t>(4 * p.S), nan);
  auto at = [&](int type, int mb, int t) -> double& { return end[static_cast<std::size_t>((type * 2 + mb) * p.S + t)]; };
  std::vector<std::size_t> next(static_cast<std::size_t>(p.S), 0);
  std::vector<double> free(static_cast<std::size_t>(p.S), kNegInf);
  for (int done = 0; done < 4 * (last - s);) {
    bool progressed = false;
    for (int t = first; t <= last; ++t) {
      const auto u = static_cast<std::size_t>(t);
      if (next[u] == list[u].size()) continue;
      const Op op = list[u][next[u]];
      double input;
      if (op.type == 0) {
        input = t == first ? (op.mb == 0 ? x : y) : at(0, op.mb, t - 1) + p.comm_after[t - 1];
      } else {
        input = t == last ? at(0, op.mb, t) : at(1, op.mb, t + 1) + p.comm_after[t];
      }
      if (!(input == input)) continue;  // not arrived yet
      const double start = std::max(free[u], input);
      at(op.type, op.mb, t) = start + p.dur[op.type * p.S + t];
      free[u] = at(op.type, op.mb, t);
      ++next[u];
      ++done;
      progressed = true;
    }
    if (!progressed) return false;
  }
  out = {at(1, 0, first) + p.comm_after[s], at(1, 1, first) + p.comm_after[s]};
  return true;
}

// Random pipelines of 2 to 6 stages with random times and comm (plain, V and loop placements:
// the pair only looks at stages).
Instance random_chain(std::mt19937& rng) {
  test_support::RandomInstanceOptions o;
  o.min_devices = 2;
  o.max_devices = 6;
  o.min_microbatches = 2;
  o.max_microbatches = 4;
  o.split_probability = 1.0;
  Instance inst = test_support::random_instance(rng, o);
  std::uniform_real_distribution<double> comm(0.0, 2.0);
  for (double& c : inst.comm) c = comm(rng);  // a different comm between each pair of stages
  return inst;
}

// pair_releases gives exactly the non-dominated release pairs of every order the lists can
// run: the 2^(S-s-1) choices of B(t, j) against F(t, k), the cyclic ones deadlocking.
TEST(PairReleases, EqualTheBruteForceOverEveryOrderOfTheLaterStages) {
  std::mt19937 rng(5);
  int cases = 0, deadlocked = 0, several = 0;
  for (int i = 0; i < 300; ++i) {
    const Instance inst = random_chain(rng);
    const BoundProblem p(inst);
    for (int s = 0; s + 1 < p.S; ++s) {
      const std::vector<PairOrder> orders = pair_release_orders(p, s);
      ASSERT_EQ(static_cast<int>(orders.size()), p.S - s);  // the thresholds tau = s+1..S
      std::uniform_real_distribution<double> start(0.0, 30.0), gap(0.0, 40.0);
      const double fj = start(rng), fk = fj + p.dur[0 * p.S + s] + (i % 3 == 0 ? 0.0 : gap(rng));
      const double comm = p.comm_after[s];
      std::vector<PairRelease> got;
      pair_releases(orders, comm, fj, fk, kNegInf, kNegInf, got);
      // Brute force: every choice per later stage; keep the non-dominated feasible ones.
      const int later = p.S - 1 - s;
      std::vector<PairRelease> want;
      for (int mask = 0; mask < (1 << later); ++mask) {
        std::vector<char> b_first(static_cast<std::size_t>(p.S), 0);
        for (int t = s + 1; t < p.S; ++t) b_first[static_cast<std::size_t>(t)] = (mask >> (t - s - 1)) & 1;
        PairRelease r;
        if (!simulate_pair(p, s, b_first, fj + comm, fk + comm, r)) {
          ++deadlocked;
          continue;
        }
        want.push_back(r);
      }
      ASSERT_FALSE(want.empty());
      std::vector<PairRelease> front;
      for (const PairRelease& r : want) {
        bool dominated = false;
        for (const PairRelease& q : want) {
          dominated = dominated || (q.j <= r.j + 1e-9 && q.k <= r.k + 1e-9 && (q.j < r.j - 1e-9 || q.k < r.k - 1e-9));
        }
        if (!dominated) front.push_back(r);
      }
      SCOPED_TRACE("instance " + std::to_string(i) + ", stage " + std::to_string(s));
      // Every brute-force pair is no smaller than one of ours (ours are lower bounds) ...
      for (const PairRelease& r : want) {
        EXPECT_TRUE(std::any_of(got.begin(), got.end(),
                                [&](const PairRelease& q) { return q.j <= r.j + 1e-9 && q.k <= r.k + 1e-9; }))
            << "brute force (" << r.j << ", " << r.k << ") below every order's releases";
      }
      // ... and each of ours is one the lists reach (no weaker than need be).
      for (const PairRelease& q : got) {
        EXPECT_TRUE(std::any_of(front.begin(), front.end(), [&](const PairRelease& r) {
          return std::abs(q.j - r.j) <= 1e-9 && std::abs(q.k - r.k) <= 1e-9;
        })) << "ours (" << q.j << ", " << q.k << ") is no order's" << [&] {
          std::string t = "; brute force:";
          for (const PairRelease& r : want) t += " (" + std::to_string(r.j) + ", " + std::to_string(r.k) + ")";
          t += "; ours:";
          for (const PairRelease& r : got) t += " (" + std::to_string(r.j) + ", " + std::to_string(r.k) + ")";
          return t + "; S " + std::to_string(p.S) + " fj " + std::to_string(fj) + " fk " + std::to_string(fk);
        }();
      }
      several += got.size() > 1 ? 1 : 0;
      ++cases;
    }
  }
  std::printf("[ pairs    ] %d stages, %d cyclic orders deadlocked, %d with more than one release pair\n", cases,
              deadlocked, several);
  EXPECT_GT(cases, 500);
  EXPECT_GT(deadlocked, 100);  // the threshold argument was exercised
  EXPECT_GT(several, 50);      // so was the branching
}

// In simulated schedules of the spec (random ones and the heuristics', with memory, offloads and
// shared devices), whenever F(s, k) starts before B(s, j), the starts of B(s, j) and B(s, k)
// are no earlier than one of the release pairs from the two forwards' ends.
TEST(PairReleases, EverySimulatedScheduleMeetsOneOrdersReleases) {
  std::mt19937 rng(17);
  int pairs = 0, tight = 0, schedules = 0;
  for (int i = 0; i < 200; ++i) {
    test_support::RandomInstanceOptions o;
    o.max_devices = 5;
    o.max_microbatches = 6;
    o.split_probability = 1.0;
    o.tight_memory = i % 2 == 0;
    const Instance inst = test_support::random_instance(rng, o);
    const BoundProblem p(inst);
    for (const test_support::TimedSchedule& t : test_support::timed_schedules(inst, p, rng)) {
      ++schedules;
      auto at = [&](const std::vector<double>& v, int type, int s, int j) {
        return v[static_cast<std::size_t>(p.op(type, s, j))];
      };
      const std::vector<double>& start = t.start;
      const std::vector<double>& end = t.end;
      for (int s = 0; s + 1 < p.S; ++s) {
        const std::vector<PairOrder> orders = pair_release_orders(p, s);
        for (int j = 0; j + 1 < p.m; ++j) {
          const int k = j + 1;
          if (!(at(start, 0, s, k) < at(start, 1, s, j))) continue;  // F(s, k) after B(s, j): no pair
          std::vector<PairRelease> rel;
          pair_releases(orders, p.comm_after[s], at(end, 0, s, j), at(end, 0, s, k), kNegInf, kNegInf, rel);
          const double bj = at(start, 1, s, j), bk = at(start, 1, s, k);
          const bool met = std::any_of(rel.begin(), rel.end(), [&](const PairRelease& r) {
            return r.j <= bj + 1e-6 && r.k <= bk + 1e-6;
          });
          EXPECT_TRUE(met) << "instance " << i << ", stage " << s << ", microbatches " << j << "," << k;
          // Tight: above both own chains somewhere (where the pair says more than the latency).
          const double own_j = at(end, 0, s, j) + p.latency[s], own_k = at(end, 0, s, k) + p.latency[s];
          tight += std::all_of(rel.begin(), rel.end(),
                               [&](const PairRelease& r) { return r.j > own_j + 1e-6 || r.k > own_k + 1e-6; })
                       ? 1
                       : 0;
          ++pairs;
        }
      }
    }
  }
  std::printf("[ pairs    ] %d pairs in %d schedules, %d where every order says more than the latency\n", pairs,
              schedules, tight);
  EXPECT_GT(schedules, 300);
  EXPECT_GT(pairs, 2000);
  EXPECT_GT(tight, 200);
}

}  // namespace
}  // namespace optpipe
