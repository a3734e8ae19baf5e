// A target for the tree search (SolveOptions::target) and probing (search/bound_probing.h),
// against the plain search's proven optima:
//   1. below the optimum the search finds nothing and proves the target a bound; at or above it,
//      it finds an optimal schedule and proves it;
//   2. probing proves the same optimum, with every refuted target below it;
//   3. the small V instance the probing was made for: seed-13-like small-v-02 shapes are solved
//      with fewer nodes than the plain search needs.
// The instances: random V and loop placements (several stages per device) under tight memory,
// where the root's device relaxation applies and, near a proof, cuts from 1/16 of the decisions
// on (search/node_expansion.h), so those cuts are checked here too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>
#include <random>
#include <stdexcept>
#include <vector>

#include "model/instance_io.h"
#include "model/simulator.h"
#include "model/validator.h"
#include "search/bound_probing.h"
#include "search/search_shared.h"
#include "search/solver.h"
#include "tests/test_paths.h"
#include "tests/test_util.h"

namespace optpipe {
namespace {

namespace fs = std::filesystem;

Instance random_multi_stage(std::mt19937& rng) { return test_support::random_multi_stage(rng, 4); }

SolveOptions one_thread() {
  SolveOptions o;
  o.threads = 1;
  o.time_limit = 20;
  o.node_limit = 400000;
  return o;
}

// The schedule is valid, feasible and as long as the result says.
void expect_schedule(const Instance& inst, const SolveResult& r) {
  ASSERT_TRUE(r.schedule.has_value());
  EXPECT_TRUE(validate(inst, *r.schedule).valid());
  const SimResult sim = simulate(inst, *r.schedule);
  ASSERT_TRUE(sim.feasible);
  EXPECT_NEAR(sim.makespan, r.makespan, 1e-9);
}

TEST(BoundProbing, ATargetBelowTheOptimumIsRefutedAndOneAtOrAboveItFindsTheOptimum) {
  std::mt19937 rng(23);
  int instances = 0, refuted = 0, found = 0;
  for (int i = 0; i < 80 && instances < 30; ++i) {
    const Instance inst = random_multi_stage(rng);
    const SolveResult exact = solve(inst, {}, one_thread());
    if (exact.status != SolveResult::Status::kOptimal) continue;
    ++instances;
    const double opt = exact.makespan;
    SCOPED_TRACE("instance " + std::to_string(i) + ", optimum " + std::to_string(opt));
    for (double below : {0.002, 0.01, 0.05}) {
      SolveOptions o = one_thread();
      o.target = opt * (1 - below);
      const SolveResult r = solve(inst, {}, o);
      EXPECT_FALSE(r.schedule.has_value()) << "a schedule of " << r.makespan << " below the optimum";
      EXPECT_EQ(r.status, SolveResult::Status::kUnknown);
      EXPECT_GE(r.bound, o.target - 1e-9);
      EXPECT_LE(r.bound, opt + 1e-6);
      refuted += !r.schedule;
    }
    for (double above : {0.0, 0.005, 0.03}) {
      SolveOptions o = one_thread();
      o.target = opt * (1 + above) + kRelaxationTolerance;
      const SolveResult r = solve(inst, {}, o);
      ASSERT_EQ(r.status, SolveResult::Status::kOptimal) << r.reason;
      EXPECT_NEAR(r.makespan, opt, 1e-6);
      expect_schedule(inst, r);
      ++found;
    }
  }
  EXPECT_GE(instances, 20);
  std::printf("[ probing  ] %d instances: %d targets below the optimum refuted, %d at or above it solved\n",
              instances, refuted, found);
}

TEST(BoundProbing, ProvesThePlainSearchsOptimaWithEveryRefutedTargetBelowThem) {
  std::mt19937 rng(29);
  int instances = 0, with_refutations = 0;
  for (int i = 0; i < 80 && instances < 30; ++i) {
    const Instance inst = random_multi_stage(rng);
    const SolveResult exact = solve(inst, {}, one_thread());
    if (exact.status != SolveResult::Status::kOptimal) continue;
    ++instances;
    SCOPED_TRACE("instance " + std::to_string(i));
    const RootBound root = root_lower_bound(inst, exact.makespan, one_thread());
    ProbingOptions po;
    po.search = one_thread();
    po.bound = root.bound;
    const ProbingResult p = probe_targets(inst, po);
    ASSERT_FALSE(p.steps.empty());
    double last = 0;
    int refuted = 0;
    for (const ProbeStep& s : p.steps) {
      EXPECT_GT(s.target, last);  // targets rise
      last = s.target;
      if (s.refuted) {
        EXPECT_LT(s.target, exact.makespan + 1e-9);  // a refuted target is a lower bound
        ++refuted;
      }
    }
    ASSERT_TRUE(p.found.has_value());
    EXPECT_TRUE(p.proven);
    EXPECT_TRUE(p.steps.back().found);
    EXPECT_NEAR(p.makespan, exact.makespan, 1e-6);
    EXPECT_NEAR(p.bound, exact.makespan, 1e-6);
    expect_schedule(inst, *p.found);
    with_refutations += refuted > 0;
  }
  EXPECT_GE(instances, 20);
  EXPECT_GT(with_refutations, 0);  // some optimum above the root bound, reached after refutations
  std::printf("[ probing  ] %d instances, %d with refuted targets before the optimum\n", instances, with_refutations);
}

// A random instance whose plain search proves its optimum in at most 2000 nodes (there probing
// takes milliseconds, where it can take seconds past thousands): that optimum, and a probe of it
// from its root bound on one thread. None for the others.
struct QuickCase {
  SolveResult exact;
  ProbingOptions probe;
};
std::optional<QuickCase> quick_case(const Instance& inst) {
  QuickCase c;
  c.exact = solve(inst, {}, one_thread());
  if (c.exact.status != SolveResult::Status::kOptimal || c.exact.stats.nodes > 2000) return std::nullopt;
  c.probe.search = one_thread();
  c.probe.bound = root_lower_bound(inst, c.exact.makespan, one_thread()).bound;
  return c;
}

// Random instances (random_multi_stage from `seed`) that quick_case takes, each handed to `body`
// under a trace of its index, for at most `tries` instances and while `more()`; a fatal failure
// in `body` (an ASSERT) ends the loop, as it ends the test.
void for_quick_cases(unsigned seed, int tries, const std::function<bool()>& more,
                     const std::function<void(const Instance&, QuickCase&)>& body) {
  std::mt19937 rng(seed);
  for (int i = 0; i < tries && more(); ++i) {
    const Instance inst = random_multi_stage(rng);
    std::optional<QuickCase> c = quick_case(inst);
    if (!c) continue;
    SCOPED_TRACE("instance " + std::to_string(i));
    body(inst, *c);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// Each target after a refutation goes on from the nodes the last search kept (TreeSearch::
// raise_target, search/cut_frontier.h) instead of a search from the root: with every target 0.1%
// above the bound so far (long_refutation 0, so the targets depend on the outcomes alone), the
// same targets are refuted and the same optimum found and proven as with a new search each, on
// fewer nodes in all where there were refutations to build on. (long_refutation 0: the next
// target is the first step after every refutation, also one in no node at all, which going on
// from the cut nodes often is.) Past the frontier's memory budget each target's search starts
// from the root again, exactly as without it.
TEST(BoundProbing, GoingOnFromTheCutNodesRefutesAndFindsWhatSearchesFromTheRootDo) {
  int compared = 0, fewer = 0;
  for_quick_cases(43, 100, [&] { return compared < 12; }, [&](const Instance& inst, QuickCase& c) {
    ProbingOptions& po = c.probe;
    po.long_refutation = 0;
    po.frontier_bytes = 0;
    const ProbingResult fresh = probe_targets(inst, po);
    po.frontier_bytes = 1;  // no node fits: every target's search from the root, as without
    const ProbingResult none_fit = probe_targets(inst, po);
    EXPECT_EQ(none_fit.nodes, fresh.nodes);  // one thread: the same searches
    po.frontier_bytes = std::size_t{64} << 20;
    const ProbingResult kept = probe_targets(inst, po);
    ASSERT_TRUE(fresh.proven);
    ASSERT_TRUE(kept.proven);
    EXPECT_NEAR(kept.makespan, c.exact.makespan, 1e-6);
    ASSERT_EQ(kept.steps.size(), fresh.steps.size());
    for (std::size_t k = 0; k < kept.steps.size(); ++k) {
      EXPECT_NEAR(kept.steps[k].target, fresh.steps[k].target, 1e-9);
      EXPECT_EQ(kept.steps[k].refuted, fresh.steps[k].refuted);
      EXPECT_EQ(kept.steps[k].found, fresh.steps[k].found);
    }
    expect_schedule(inst, *kept.found);
    if (kept.steps.size() < 3) return;  // two refutations at least: something to build on
    ++compared;
    fewer += kept.nodes < fresh.nodes;
  });
  EXPECT_GE(compared, 6);
  EXPECT_GE(fewer, compared / 2);
  std::printf("[ probing  ] from the cut nodes: %d probes with two refutations or more, %d on fewer nodes\n", compared,
              fewer);
}

// At the incumbent (ProbingOptions::upper): no target reaches it, and past a refutation the last
// one lies just below it, from the frontier kept. With the optimum as the incumbent that target is
// refuted and the bound is the optimum (before, the targets stopped one short and the bound with
// them); with an incumbent a little above the optimum it finds the optimum and proves it.
TEST(BoundProbing, AtTheIncumbentTheLastTargetIsJustBelowIt) {
  int at_optimum = 0, above = 0, below_used = 0;
  for_quick_cases(47, 200, [&] { return at_optimum < 8; }, [&](const Instance& inst, QuickCase& c) {
    const double optimum = c.exact.makespan;
    ProbingOptions& po = c.probe;
    po.upper = optimum;
    const ProbingResult p = probe_targets(inst, po);
    if (p.steps.empty() || !p.steps.front().refuted) return;  // nothing refuted: nothing to go on from
    ++at_optimum;
    for (const ProbeStep& st : p.steps) EXPECT_LT(st.target, optimum - 1e-12);
    const ProbeStep& last = p.steps.back();
    EXPECT_TRUE(last.below_incumbent);
    EXPECT_TRUE(last.refuted);
    EXPECT_FALSE(p.found.has_value());
    EXPECT_NEAR(p.bound, optimum, 1e-9);

    po.upper = optimum * 1.0005;
    const ProbingResult q = probe_targets(inst, po);
    ASSERT_TRUE(q.found.has_value());
    EXPECT_TRUE(q.proven);
    EXPECT_NEAR(q.makespan, optimum, 1e-6);
    for (const ProbeStep& st : q.steps) EXPECT_LT(st.target, po.upper);
    expect_schedule(inst, *q.found);
    ++above;
    below_used += q.steps.back().below_incumbent;
  });
  EXPECT_GE(at_optimum, 4);
  EXPECT_GT(below_used, 0);  // the optimum found by the target below the incumbent, at least once
  std::printf("[ probing  ] at the incumbent: %d proven by the target below it, %d found below a higher one (%d by "
              "that target)\n", at_optimum, above, below_used);
}

// Below a node whose device relaxation stopped at its node limit undecided, the children do not
// ask theirs unless their decision is on the relaxed device (node_expansion.cc): on small-loop-03
// of bench/solvers/random_small.py (seed 11; root bound 41.72, optimum 42.30) the first target,
// 0.1% above the bound, is refuted with 18.3M nodes of device relaxations (3.1k tree nodes).
// When every child asked, each near the root searched 20k nodes to stop undecided again: 27.8M
// (2.2k tree nodes, twice the time; in the 4 s that `optpipe solve` gives the first target with
// two threads it stopped after 1.5k nodes, not refuted).
TEST(BoundProbing, BelowAnUndecidedDeviceRelaxationTheChildrenDoNotAsk) {
  const Instance inst =
      load_instance((fs::path(OPTPIPE_SOURCE_DIR) / "tests" / "data" / "relaxation" / "small-loop-03.json").string());
  const RootBound root = root_lower_bound(inst, 44.32, one_thread());  // the quick local search's best there
  ASSERT_TRUE(root.device_relaxation_ran);
  EXPECT_NEAR(root.bound, 41.72, 1e-6);
  ProbingOptions po;
  po.search = one_thread();
  po.search.time_limit = 120;  // the node limit decides (5-7 s here; a slower machine must not stop it)
  po.bound = root.bound;
  po.upper = 44.32;
  po.node_limit = 20000;
  po.time_limit = 120;
  const ProbingResult p = probe_targets(inst, po);
  ASSERT_FALSE(p.steps.empty());
  std::printf("[ probing  ] small-loop-03's first target: %s in %lld nodes (%lld of device relaxations), %.2f s\n",
              p.steps[0].refuted ? "refuted" : "not refuted", static_cast<long long>(p.steps[0].nodes),
              static_cast<long long>(p.steps[0].relaxation_nodes), p.steps[0].seconds);
  EXPECT_TRUE(p.steps[0].refuted);
  EXPECT_LT(p.steps[0].relaxation_nodes, 23'000'000);
}

// Probing's last target found a schedule but its node limit stopped the proof: the search it
// hands over (ProbingSearch) goes on from its frontier (TreeSearch::resume_from_frontier) to the
// optimum, proven, also where the schedule found at the stop was not yet the optimum.
TEST(BoundProbing, AFoundTargetStoppedAtItsLimitGoesOnFromItsFrontierToTheOptimum) {
  int resumed = 0, improved = 0;
  for_quick_cases(37, 200, [&] { return resumed < 12 || improved < 2; }, [&](const Instance& inst, QuickCase& c) {
    ProbingOptions& po = c.probe;
    po.search.node_limit = -1;
    const ProbingResult full = probe_targets(inst, po);
    ASSERT_TRUE(full.proven);
    if (!full.steps.back().found || full.steps.back().nodes < 8) return;
    po.grace = 1;
    for (const std::int64_t left : {full.steps.back().nodes / 4, full.steps.back().nodes / 2}) {
      po.node_limit = full.nodes - left;
      ProbingSearch keep;
      const ProbingResult p = probe_targets(inst, po, &keep);
      if (!keep.search) continue;  // stopped before it found one, or proved it
      ASSERT_TRUE(p.found.has_value());
      EXPECT_FALSE(p.proven);
      EXPECT_TRUE(keep.search->resumable_from_frontier());
      EXPECT_FALSE(keep.search->resumable());  // its open nodes are in the frontier, not the pool
      ++resumed;
      improved += p.makespan > c.exact.makespan + 1e-6 ? 1 : 0;
      ResumeOptions ro;
      ro.time_limit = 60;
      const SolveResult r = keep.search->resume_from_frontier({}, ro);
      EXPECT_EQ(r.status, SolveResult::Status::kOptimal);
      EXPECT_NEAR(r.makespan, c.exact.makespan, 1e-6);
      EXPECT_NEAR(r.bound, c.exact.makespan, 1e-6);
      expect_schedule(inst, r);
      EXPECT_LE(p.nodes + r.stats.nodes, 2 * full.nodes + 10);
      EXPECT_THROW(keep.search->resume_from_frontier({}, ro), std::logic_error);  // nothing left to go on from
    }
  });
  std::printf("[ probing  ] %d probes stopped after finding a schedule went on from their frontier (%d improved it)\n",
              resumed, improved);
  EXPECT_GE(resumed, 10);
  EXPECT_GE(improved, 2);
}

// The grace (ProbingOptions::grace): once a target is refuted the limits grow, so a probe whose
// node limit only covers its first target still finds and proves the optimum with grace enough;
// without it, it stops after that target; and where no target has been refuted, the limit holds.
TEST(BoundProbing, OnlyAProbeThatRefutedATargetRunsPastItsNodeLimit) {
  int converging = 0, first_found = 0;
  const auto more = [&] { return converging < 4 || first_found < 2; };
  for_quick_cases(31, 120, more, [&](const Instance& inst, QuickCase& c) {
    const SolveResult& exact = c.exact;
    ProbingOptions& po = c.probe;
    po.search.node_limit = -1;
    const ProbingResult full = probe_targets(inst, po);
    ASSERT_TRUE(full.proven);
    const std::int64_t first = full.steps.front().nodes;
    if (full.steps.front().refuted && full.steps.size() >= 2 && full.nodes > 2 * first + 10) {
      ++converging;
      po.node_limit = first;  // the first target's search alone
      const ProbingResult without = probe_targets(inst, po);
      EXPECT_FALSE(without.proven);
      EXPECT_LE(without.nodes, po.node_limit + 1);
      EXPECT_NEAR(without.bound, full.steps.front().target, 1e-9);  // what it refuted still counts
      po.grace = static_cast<double>(full.nodes) / static_cast<double>(first) + 1;
      const ProbingResult with = probe_targets(inst, po);
      EXPECT_TRUE(with.proven);
      EXPECT_NEAR(with.makespan, exact.makespan, 1e-6);
      EXPECT_EQ(with.nodes, full.nodes);  // one thread: the same searches
      po.grace = 1.5;
      EXPECT_LE(probe_targets(inst, po).nodes, static_cast<std::int64_t>(1.5 * static_cast<double>(first)) + 1);
    } else if (full.steps.front().found && full.nodes > 20) {
      ++first_found;
      po.node_limit = full.nodes / 2;
      po.grace = 100;  // nothing refuted: no grace
      const ProbingResult p = probe_targets(inst, po);
      EXPECT_FALSE(p.proven);
      EXPECT_LE(p.nodes, po.node_limit + 1);
    }
  });
  EXPECT_GE(converging, 4);
  EXPECT_GE(first_found, 2);
  std::printf("[ probing  ] grace: %d converging probes, %d found at their first target\n", converging, first_found);
}

// After a refutation that took at least long_refutation nodes the next target is again the first
// step, 0.1% above the new bound; with the threshold at zero nodes every target is.
TEST(BoundProbing, ALongRefutationSendsTheNextTargetBackToTheFirstStep) {
  int checked = 0;
  for_quick_cases(37, 80, [&] { return checked < 5; }, [&](const Instance& inst, QuickCase& c) {
    const SolveResult& exact = c.exact;
    ProbingOptions& po = c.probe;
    po.long_refutation = 0;  // every refutation, also one in no node (going on from the cut nodes)
    const ProbingResult every = probe_targets(inst, po);
    po.long_refutation = 1000000000;
    const ProbingResult never = probe_targets(inst, po);
    ASSERT_TRUE(every.proven);
    ASSERT_TRUE(never.proven);
    EXPECT_NEAR(every.makespan, exact.makespan, 1e-6);
    if (never.steps.size() < 3 || !never.steps[1].refuted) return;  // wider steps only from the third on
    ++checked;
    double bound = po.bound;
    for (const ProbeStep& s : every.steps) {
      EXPECT_NEAR(s.target, bound * 1.001 + kRelaxationTolerance, 1e-9);
      if (s.refuted) bound = s.target;
    }
    // Without the restart the third target (at least) is a wider step than 0.1%.
    EXPECT_GT(never.steps[2].target, never.steps[1].target * 1.001 + kRelaxationTolerance + 1e-9);
  });
  EXPECT_GE(checked, 2);
  std::printf("[ probing  ] long refutations: %d instances with three or more targets\n", checked);
}

// No target is more than the widest step (ProbingOptions::widest_step, 1% by default) above the
// bound before it, save the last one just below the incumbent; with 2% as the widest some are,
// where the optimum lies far enough above the root bound. Both prove the same optima.
TEST(BoundProbing, NoTargetIsWiderThanTheWidestStepAboveTheBoundBeforeIt) {
  int probes = 0, wider_with_two = 0;
  for_quick_cases(41, 120, [&] { return probes < 25; }, [&](const Instance& inst, QuickCase& c) {
    ProbingOptions& po = c.probe;
    po.upper = c.exact.makespan * 1.2;  // room above the optimum: the steps, not the incumbent, end the probe
    ASSERT_EQ(po.widest_step, 3u);  // the default
    const ProbingResult narrow = probe_targets(inst, po);
    po.widest_step = 4;
    const ProbingResult wide = probe_targets(inst, po);
    ASSERT_TRUE(narrow.proven);
    ASSERT_TRUE(wide.proven);
    EXPECT_NEAR(narrow.makespan, c.exact.makespan, 1e-6);
    EXPECT_NEAR(wide.makespan, c.exact.makespan, 1e-6);
    ++probes;
    auto widest = [&](const ProbingResult& p) {
      double bound = po.bound, most = 0;
      for (const ProbeStep& s : p.steps) {
        if (!s.below_incumbent) most = std::max(most, (s.target - kRelaxationTolerance) / bound - 1);
        if (s.refuted) bound = s.target;
      }
      return most;
    };
    EXPECT_LE(widest(narrow), 0.01 + 1e-9);
    wider_with_two += widest(wide) > 0.01 + 1e-9;
  });
  EXPECT_GE(probes, 10);
  EXPECT_GT(wider_with_two, 0);
  std::printf("[ probing  ] widest step: %d probes, %d with a step over 1%% when 2%% is allowed\n", probes,
              wider_with_two);
}

// small-v-02 (bench/solvers/random_small.py, seed 11): its root bound, 43.77 ms with the pair
// releases, is its optimum; the first target (0.1% above) finds and proves it. The plain tree
// explores every node between the bound and the heuristics' incumbent before it finds it.
TEST(BoundProbing, SmallV02IsSolvedAtTheFirstTargetInFewerNodesThanThePlainSearch) {
  const Instance inst = load_instance((fs::path(OPTPIPE_SOURCE_DIR) / "tests" / "data" / "relaxation" /
                                       "small-v-02.json").string());
  SolveOptions o = one_thread();
  o.time_limit = 60;
  o.node_limit = -1;
  const SolveResult plain = solve(inst, {}, o);
  ASSERT_EQ(plain.status, SolveResult::Status::kOptimal);
  EXPECT_NEAR(plain.makespan, 43.77, 1e-6);
  const RootBound root = root_lower_bound(inst, plain.makespan, o);
  ProbingOptions po;
  po.search = o;
  po.bound = root.bound;
  po.node_limit = 1000000;
  const ProbingResult p = probe_targets(inst, po);
  ASSERT_TRUE(p.proven);
  EXPECT_NEAR(p.makespan, 43.77, 1e-6);
  ASSERT_EQ(p.steps.size(), 1u);
  EXPECT_LT(p.nodes, plain.stats.nodes / 4);
  std::printf("[ probing  ] small-v-02: %lld nodes probing, %lld plain\n", static_cast<long long>(p.nodes),
              static_cast<long long>(plain.stats.nodes));
}

// With the two-device relaxations first (ProbingOptions::two_device_nodes), seed-23
// small-loop-01 of random_small.py starts from its optimum, 30.02 ms (the root's bounds: 29.02),
// and the first target finds and proves it, in fewer nodes than the probe from the root's bound.
TEST(BoundProbing, TheTwoDeviceRelaxationsFirstStartSeed23SmallLoop01AtItsOptimum) {
  const Instance inst = load_instance((fs::path(OPTPIPE_SOURCE_DIR) / "tests" / "data" / "relaxation" /
                                       "seed23-small-loop-01.json").string());
  SolveOptions o = one_thread();
  o.node_limit = -1;
  const RootBound root = root_lower_bound(inst, 30.42, o);
  EXPECT_NEAR(root.bound, 29.02, 1e-6);
  ProbingOptions po;
  po.search = o;
  po.bound = root.bound;
  po.upper = 30.42;  // ZB greedy's schedule
  po.node_limit = 1000000;
  const ProbingResult plain = probe_targets(inst, po);
  ASSERT_TRUE(plain.proven);
  EXPECT_EQ(plain.two_device.pairs, 0);
  po.two_device_nodes = 200000;
  const ProbingResult first = probe_targets(inst, po);
  EXPECT_EQ(first.two_device.pairs, 6);
  EXPECT_NEAR(first.start, 30.02, 1e-6);
  ASSERT_TRUE(first.proven);
  EXPECT_NEAR(first.makespan, 30.02, 1e-6);
  EXPECT_NEAR(plain.makespan, 30.02, 1e-6);
  ASSERT_EQ(first.steps.size(), 1u);
  EXPECT_GT(plain.steps.size(), 1u);
  EXPECT_LT(first.nodes, plain.nodes);
  std::printf("[ probing  ] seed-23 small-loop-01: %lld nodes from the two devices' %.2f (%lld in the relaxations), "
              "%lld from the root's %.2f\n",
              static_cast<long long>(first.nodes), first.start, static_cast<long long>(first.two_device.nodes),
              static_cast<long long>(plain.nodes), plain.start);
}

}  // namespace
}  // namespace optpipe
