// Tests of the local search (heuristics/local_search.h).
//
// 1. The moves against the validator as an oracle (differential): for every move of the
//    neighbourhood of random valid schedules, the fast one-list check (list_well_formed) agrees
//    with check_structure() on the edited schedule, and apply_move() only produces schedules that
//    check_structure() accepts. Naive enumerations cross-check completeness: every adjacent
//    interchange of two compute actions that the validator accepts as a plain swap is produced by
//    the kShift move, every list position the validator accepts for an R is reachable by
//    kReloadShift, every accepted R position of a new offload by kOffloadLevel. Lists the moves
//    skip as self-deadlocking really deadlock in the simulator.
// 2. improve_schedule() on many random small instances (one or more stages per device, split and
//    fused backward, with and without offload, generous and tight memory, squeeze_memory): the
//    result is well formed, completes, re-simulates to a makespan no larger than the start's and
//    carries the simulation's numbers; the evaluation budget is kept.
// 3. Against the brute-force optimum (tests/brute_force.h) of tiny instances: never below it, and
//    from starts that are not optimal it improves some and reaches the optimum on some.
// 4. Determinism: two runs with the same seed and budget give the same lists and statistics.
// 5. Starts that are malformed or deadlock are refused.
// Expectations come from the validator, the simulator and brute force, never from running the
// search itself.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "model/error.h"
#include "model/instance_io.h"
#include "model/simulator.h"
#include "model/validator.h"
#include "heuristics/gpipe.h"
#include "instances/generator/generate.h"
#include "instances/generator/generate_request.h"
#include "heuristics/local_search.h"
#include "heuristics/offload_edit.h"
#include "heuristics/registry.h"
#include "tests/brute_force.h"
#include "tests/test_paths.h"
#include "tests/test_util.h"

namespace optpipe {
namespace {

using local_search::Move;

constexpr double kEps = 1e-6;

std::string text(const Schedule& sch) {
  std::string out;
  for (int d = 0; d < sch.num_devices(); ++d) {
    out += "\n  d" + std::to_string(d) + ":";
    for (const Action& a : sch.devices[d]) out += " " + to_string(a);
  }
  return out;
}

std::string text(const Move& mv) {
  return std::string(to_string(mv.kind)) + " d" + std::to_string(mv.device) + " #" + std::to_string(mv.index) +
         " delta " + std::to_string(mv.delta) + " r " + std::to_string(mv.r) + " pos " + std::to_string(mv.position);
}

bool well_formed(const Instance& inst, const Schedule& sch) { return check_structure(inst, sch, 1).empty(); }

// Random instances of every kind the generator makes; `tight` alternates, and every fourth one
// is squeezed to a little more than one activation per device.
std::vector<Instance> random_instances(int count, std::uint32_t seed, int max_devices, int max_microbatches) {
  std::mt19937 rng(seed);
  std::vector<Instance> out;
  for (int i = 0; i < count; ++i) {
    test_support::RandomInstanceOptions o;
    o.max_devices = max_devices;
    o.max_microbatches = max_microbatches;
    o.tight_memory = i % 2 == 1;
    o.offloadable_probability = i % 3 == 2 ? 0.0 : 0.7;
    Instance inst = test_support::random_instance(rng, o);
    if (i % 4 == 3) test_support::squeeze_memory(inst, 1.05);
    inst.name = "random-" + std::to_string(i);
    out.push_back(std::move(inst));
  }
  return out;
}

std::string label(const Instance& inst) {
  return inst.name + " (D=" + std::to_string(inst.num_devices()) + " S=" + std::to_string(inst.num_stages()) +
         " m=" + std::to_string(inst.microbatches) + (inst.split_backward ? " split" : " fused") +
         (inst.can_offload() ? " offload" : "") + ")";
}

// A random well-formed schedule that completes, or nullopt after `tries` deadlocking ones.
std::optional<Schedule> random_feasible_schedule(const Instance& inst, std::mt19937& rng, int tries = 30) {
  for (int t = 0; t < tries; ++t) {
    Schedule s = test_support::random_valid_schedule(inst, rng, 0.4);
    if (simulate(inst, s, SimOptions::quiet()).feasible) return s;
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// 1. The moves against the validator.

TEST(LocalSearch, EveryMoveAgreesWithTheValidator) {
  std::mt19937 rng(7);
  std::int64_t moves = 0, applied = 0, accepted = 0, pruned = 0;
  for (const Instance& inst : random_instances(60, 11, 3, 4)) {
    SCOPED_TRACE(label(inst));
    for (int rep = 0; rep < 2; ++rep) {
      const Schedule sch = test_support::random_valid_schedule(inst, rng, 0.5);
      ASSERT_TRUE(well_formed(inst, sch));
      for (const Move& mv : local_search::all_moves(inst, sch, 3)) {
        ++moves;
        Schedule raw = sch;
        if (!local_search::apply_raw(inst, raw, mv)) {
          EXPECT_EQ(raw.devices, sch.devices) << "a move that does not apply changed the lists: " << text(mv);
          continue;
        }
        ++applied;
        const bool fast = local_search::list_well_formed(inst, mv.device, raw.devices[mv.device]);
        EXPECT_EQ(fast, well_formed(inst, raw)) << text(mv) << text(raw);
        Schedule checked = sch;
        const bool ok = local_search::apply_move(inst, checked, mv);
        if (ok) {
          ++accepted;
          EXPECT_TRUE(well_formed(inst, checked)) << text(mv) << text(checked);
          EXPECT_EQ(checked.devices, raw.devices);
        } else {
          EXPECT_EQ(checked.devices, sch.devices) << "a refused move changed the lists: " << text(mv);
          if (fast) {
            // Refused although well formed: only because the list deadlocks by itself.
            ++pruned;
            EXPECT_TRUE(local_search::list_self_deadlocks(inst, raw.devices[mv.device]));
            EXPECT_FALSE(simulate(inst, raw, SimOptions::quiet(false)).feasible)
                << "pruned a list that completes: " << text(mv) << text(raw);
          }
        }
      }
    }
  }
  std::printf("[ local    ] %lld moves, %lld apply, %lld well formed and kept, %lld pruned as self-deadlocking\n",
              static_cast<long long>(moves), static_cast<long long>(applied), static_cast<long long>(accepted),
              static_cast<long long>(pruned));
  EXPECT_GT(accepted, 1000);
  EXPECT_GT(pruned, 10);
  EXPECT_GT(applied, accepted + pruned);  // the check has something to refuse
}

TEST(LocalSearch, AdjacentInterchangesAreComplete) {
  // Naive: swap two consecutive compute actions of a list in place (the Rs between them stay);
  // whatever the validator accepts must be exactly what kShift +1 makes.
  std::mt19937 rng(8);
  int compared = 0;
  for (const Instance& inst : random_instances(60, 12, 3, 4)) {
    SCOPED_TRACE(label(inst));
    const Schedule sch = test_support::random_valid_schedule(inst, rng, 0.5);
    for (int d = 0; d < sch.num_devices(); ++d) {
      const auto& list = sch.devices[d];
      for (int i = 0; i < static_cast<int>(list.size()); ++i) {
        if (!list[i].is_compute()) continue;
        int q = i + 1;
        while (q < static_cast<int>(list.size()) && !list[q].is_compute()) ++q;
        if (q >= static_cast<int>(list.size())) continue;
        Schedule naive = sch;
        std::swap(naive.devices[d][i], naive.devices[d][q]);
        if (!well_formed(inst, naive)) continue;
        ++compared;
        Schedule mine = sch;
        ASSERT_TRUE(local_search::apply_raw(inst, mine, Move{MoveKind::kShift, d, i, 1, 0.0, 0}));
        EXPECT_EQ(mine.devices, naive.devices) << "d" << d << " #" << i << text(sch);
        // And the same interchange seen from the other action.
        Schedule back = sch;
        ASSERT_TRUE(local_search::apply_raw(inst, back, Move{MoveKind::kShift, d, q, -1, 0.0, 0}));
        EXPECT_EQ(back.devices, naive.devices);
      }
    }
  }
  EXPECT_GT(compared, 500);
}

TEST(LocalSearch, ReloadPositionsAreComplete) {
  // Naive: take each R out and put it at every position of its list; the positions the validator
  // accepts must be exactly those kReloadShift reaches (with list_well_formed as its check).
  std::mt19937 rng(9);
  int reloads = 0;
  for (const Instance& inst : random_instances(80, 13, 3, 4)) {
    if (!inst.can_offload()) continue;
    SCOPED_TRACE(label(inst));
    const Schedule sch = test_support::random_valid_schedule(inst, rng, 0.8);
    for (int d = 0; d < sch.num_devices(); ++d) {
      const auto& list = sch.devices[d];
      const int n = static_cast<int>(list.size());
      for (int k = 0; k < n; ++k) {
        if (list[k].type != OpType::R) continue;
        ++reloads;
        for (int t = 0; t < n; ++t) {
          Schedule naive = sch;
          naive.devices[d].erase(naive.devices[d].begin() + k);
          naive.devices[d].insert(naive.devices[d].begin() + t, list[k]);
          const bool valid = well_formed(inst, naive);
          Schedule mine = sch;
          const bool ok = t != k && local_search::apply_raw(inst, mine, Move{MoveKind::kReloadShift, d, k, t - k, 0.0, 0});
          if (t == k) continue;
          ASSERT_TRUE(ok);
          EXPECT_EQ(mine.devices, naive.devices);
          EXPECT_EQ(local_search::list_well_formed(inst, d, mine.devices[d]), valid)
              << to_string(list[k]) << " to " << t << text(sch);
        }
      }
    }
  }
  EXPECT_GT(reloads, 50);
}

// Calls fn(inst, sch, d, k) for every F without offload of an offloadable stage, at index k of
// device d's list in a random valid schedule (offload probability p) of each instance that can
// offload.
template <class Fn>
void for_each_kept_forward(const std::vector<Instance>& instances, std::mt19937& rng, double p, Fn fn) {
  for (const Instance& inst : instances) {
    if (!inst.can_offload()) continue;
    SCOPED_TRACE(label(inst));
    const Schedule sch = test_support::random_valid_schedule(inst, rng, p);
    for (int d = 0; d < sch.num_devices(); ++d) {
      const auto& list = sch.devices[d];
      for (int k = 0; k < static_cast<int>(list.size()); ++k) {
        const Action& f = list[k];
        if (f.type == OpType::F && f.r <= 0 && inst.stages[f.stage].offloadable()) fn(inst, sch, d, k);
      }
    }
  }
}

TEST(LocalSearch, NewOffloadPositionsAreComplete) {
  // Naive: give an F without offload every other level and insert its R at every position; the
  // validator's accepted positions must be the ones kOffloadLevel produces when asked for them,
  // and any other requested position must still give a well-formed list.
  std::mt19937 rng(10);
  int forwards = 0;
  for_each_kept_forward(random_instances(80, 14, 3, 3), rng, 0.3, [&](const Instance& inst, const Schedule& sch, int d, int k) {
    const auto& list = sch.devices[d];
    const int n = static_cast<int>(list.size());
    const Action& f = list[k];
    ++forwards;
    for (double r : inst.offload_levels) {
      if (r <= 0) continue;
      for (int p = 0; p <= n; ++p) {
        Schedule naive = sch;
        naive.devices[d][k].r = r;
        naive.devices[d].insert(naive.devices[d].begin() + p, make_r(f.stage, f.mb));
        const bool valid = well_formed(inst, naive);
        Schedule mine = sch;
        ASSERT_TRUE(local_search::apply_move(inst, mine, Move{MoveKind::kOffloadLevel, d, k, 0, r, p}));
        EXPECT_TRUE(well_formed(inst, mine));
        if (valid) {
          EXPECT_EQ(mine.devices, naive.devices) << to_string(f) << " R at " << p << text(sch);
        }
      }
      // And back to 0: the original lists.
      Schedule there = sch, back;
      ASSERT_TRUE(local_search::apply_move(inst, there, Move{MoveKind::kOffloadLevel, d, k, 0, r, n}));
      back = there;
      ASSERT_TRUE(local_search::apply_move(inst, back, Move{MoveKind::kOffloadLevel, d, k, 0, 0.0, 0}));
      EXPECT_EQ(back.devices, sch.devices);
    }
  });
  EXPECT_GT(forwards, 50);
}

TEST(LocalSearch, OffloadSwapIsTheTwoLevelEditsDoneByHand) {
  // Naive: a kept F(s,j) and an offloaded F(s,j') of the same stage, |j - j'| <= kSwapReach; by
  // hand, F(s,j') gets level 0 and loses its R, F(s,j) gets F(s,j')'s level and its R at every
  // position of the original list. Where that list is well formed, kOffloadSwap asked for that
  // position gives exactly it; at any other position its list is still well formed; the stage
  // keeps its number of offloads and its levels.
  std::mt19937 rng(12);
  int swaps = 0, exact = 0;
  for_each_kept_forward(random_instances(80, 15, 3, 5), rng, 0.5, [&](const Instance& inst, const Schedule& sch, int d, int k) {
    const auto& list = sch.devices[d];
    const int n = static_cast<int>(list.size());
    const Action& f = list[k];
    for (int delta = -kSwapReach; delta <= kSwapReach; ++delta) {
      const int partner = f.mb + delta;
      if (delta == 0 || partner < 0 || partner >= inst.microbatches) continue;
      const int pf = find_action(list, OpType::F, f.stage, partner);
      if (pf < 0 || list[pf].r <= 0) continue;
      const double r = list[pf].r;
      ++swaps;
      for (int p = 0; p <= n; ++p) {
        Schedule naive = sch;
        auto& nl = naive.devices[d];
        nl[pf].r = 0;
        nl[k].r = r;
        const int pr = find_action(nl, OpType::R, f.stage, partner);
        nl.insert(nl.begin() + p, make_r(f.stage, f.mb));
        nl.erase(nl.begin() + (pr >= p ? pr + 1 : pr));
        const bool valid = well_formed(inst, naive);
        Schedule mine = sch;
        ASSERT_TRUE(local_search::apply_move(inst, mine, Move{MoveKind::kOffloadSwap, d, k, delta, 0.0, p}))
            << to_string(f) << " with microbatch " << partner << text(sch);
        EXPECT_TRUE(well_formed(inst, mine));
        EXPECT_EQ(offload_level(mine, d, f.stage, f.mb), r);
        EXPECT_EQ(offload_level(mine, d, f.stage, partner), 0.0);
        if (valid) {
          ++exact;
          EXPECT_EQ(mine.devices, naive.devices) << to_string(f) << " with " << partner << ", R at " << p << text(sch);
        }
      }
    }
  });
  std::printf("[ local    ] %d swaps, %d positions valid by hand\n", swaps, exact);
  EXPECT_GT(swaps, 50);
  EXPECT_GT(exact, 100);
  // A swap with a partner that is not offloaded, out of range, or from an offloaded F does not apply.
  Instance inst = test_support::uniform_instance(1, 3, 1, 1, 1);
  inst.stages[0].offload = 1.0;
  inst.stages[0].reload = 1.0;
  Schedule one = test_support::lists(inst, {{"F0.0", "F0.1@1", "F0.2", "R0.1", "B0.0", "B0.1", "B0.2"}});
  Schedule untouched = one;
  EXPECT_FALSE(local_search::apply_raw(inst, untouched, Move{MoveKind::kOffloadSwap, 0, 0, 2, 0.0, 1}));
  EXPECT_FALSE(local_search::apply_raw(inst, untouched, Move{MoveKind::kOffloadSwap, 0, 0, -1, 0.0, 1}));
  EXPECT_FALSE(local_search::apply_raw(inst, untouched, Move{MoveKind::kOffloadSwap, 0, 1, 1, 0.0, 2}));
  EXPECT_EQ(untouched.devices, one.devices);
  ASSERT_TRUE(local_search::apply_move(inst, untouched, Move{MoveKind::kOffloadSwap, 0, 0, 1, 0.0, 4}));
  EXPECT_EQ(untouched.devices, test_support::lists(inst, {{"F0.0@1", "F0.1", "F0.2", "R0.0", "B0.0", "B0.1", "B0.2"}}).devices);
}

TEST(LocalSearch, ShiftCarriesTheOwnReload) {
  // An F moving past its own R takes the R along (right after it); a B moving before its own R
  // takes the R along (right before it); other Rs keep their place between the compute actions.
  Instance inst = test_support::uniform_instance(2, 3, 1, 1, 1);
  for (Stage& st : inst.stages) st.offload = st.reload = 0.5;
  const std::vector<std::string> rest = {"W0.0", "F0.2", "B0.1", "W0.1", "B0.2", "W0.2"};
  const std::vector<std::string> dev1 = {"F1.0", "B1.0", "W1.0", "F1.1", "B1.1", "W1.1", "F1.2", "B1.2", "W1.2"};
  auto make = [&](std::vector<std::string> head) {
    head.insert(head.end(), rest.begin(), rest.end());
    return test_support::lists(inst, std::vector<std::vector<std::string>>{head, dev1});
  };
  struct Case {
    std::vector<std::string> before;
    Move move;
    std::vector<std::string> after;
  };
  const std::vector<Case> cases = {
      // F0.1 moves after B0.0 and takes R0.1 along.
      {{"F0.0", "F0.1@1", "R0.1", "B0.0"}, Move{MoveKind::kShift, 0, 1, 1, 0.0, 0}, {"F0.0", "B0.0", "F0.1@1", "R0.1"}},
      // B0.0 moves before F0.1 and takes R0.0 along.
      {{"F0.0@1", "F0.1", "R0.0", "B0.0"}, Move{MoveKind::kShift, 0, 3, -1, 0.0, 0}, {"F0.0@1", "R0.0", "B0.0", "F0.1"}},
      // Both at once; the same interchange asked for from either side.
      {{"F0.0@1", "F0.1@1", "R0.0", "R0.1", "B0.0"}, Move{MoveKind::kShift, 0, 1, 1, 0.0, 0},
       {"F0.0@1", "R0.0", "B0.0", "F0.1@1", "R0.1"}},
      {{"F0.0@1", "F0.1@1", "R0.0", "R0.1", "B0.0"}, Move{MoveKind::kShift, 0, 4, -1, 0.0, 0},
       {"F0.0@1", "R0.0", "B0.0", "F0.1@1", "R0.1"}},
  };
  for (std::size_t c = 0; c < cases.size(); ++c) {
    Schedule sch = make(cases[c].before);
    ASSERT_TRUE(well_formed(inst, sch)) << text(sch);
    ASSERT_TRUE(local_search::apply_move(inst, sch, cases[c].move)) << c;
    EXPECT_EQ(text(sch), text(make(cases[c].after))) << "case " << c;
    EXPECT_TRUE(well_formed(inst, sch));
  }
  // The R of another op stays in its gap (after the first compute action of the pair).
  Schedule other = test_support::lists(
      inst, std::vector<std::vector<std::string>>{
                {"F0.0", "F0.1@1", "B0.0", "W0.0", "R0.1", "F0.2", "B0.1", "W0.1", "B0.2", "W0.2"}, dev1});
  ASSERT_TRUE(local_search::apply_move(inst, other, Move{MoveKind::kShift, 0, 3, 1, 0.0, 0}));
  EXPECT_EQ(text(other),
            text(test_support::lists(inst, std::vector<std::vector<std::string>>{
                                          {"F0.0", "F0.1@1", "B0.0", "F0.2", "R0.1", "W0.0", "B0.1", "W0.1", "B0.2", "W0.2"},
                                          dev1})));
  // Two ops of one stage and type are never interchanged.
  Schedule fifo = make({"F0.0@1", "F0.1", "R0.0", "B0.0"});
  EXPECT_FALSE(local_search::apply_raw(inst, fifo, Move{MoveKind::kShift, 0, 0, 1, 0.0, 0}));
}

// ---------------------------------------------------------------------------------------------
// 2. improve_schedule on random instances.

// Checks the output of improve_schedule against the validator and a fresh simulation; returns
// its makespan.
double check_result(const Instance& inst, const Schedule& start, const Schedule& out, const LocalSearchOptions& o,
                    const LocalSearchStats& st) {
  const Validation v = validate(inst, out, SimOptions::quiet());
  EXPECT_TRUE(v.valid()) << v.violations.front().message << text(out);
  if (!v.valid()) return 0;
  EXPECT_TRUE(v.sim->feasible) << v.sim->reason << text(out);
  const double start_makespan = simulate(inst, start, SimOptions::quiet()).makespan;
  EXPECT_LE(v.sim->makespan, start_makespan + kEps);
  EXPECT_NEAR(st.start_makespan, start_makespan, kEps);
  EXPECT_NEAR(st.final_makespan, v.sim->makespan, kEps);
  EXPECT_TRUE(out.makespan.has_value());
  if (out.makespan) {
    EXPECT_NEAR(*out.makespan, v.sim->makespan, kEps);
  }
  EXPECT_EQ(out.peak_memory, v.sim->peak_memory);
  EXPECT_EQ(out.status, "feasible");
  EXPECT_LE(st.evaluations, o.max_evaluations);
  EXPECT_GE(st.evaluations, 1);
  return v.sim->makespan;
}

TEST(LocalSearch, NeverWorseThanTheStartOnRandomInstances) {
  std::mt19937 rng(21);
  int from_heuristics = 0, from_random = 0, improved_heuristic = 0, improved_random = 0;
  LocalSearchOptions o;
  o.max_evaluations = 400;
  for (const Instance& inst : random_instances(48, 22, 4, 6)) {
    SCOPED_TRACE(label(inst));
    const BestResult best = run_all_heuristics(inst, false);
    if (const HeuristicResult* h = best.best_result()) {
      ++from_heuristics;
      LocalSearchStats st;
      const Schedule out = improve_schedule(inst, *h->schedule, o, &st);
      if (check_result(inst, *h->schedule, out, o, st) < h->sim.makespan - kEps) ++improved_heuristic;
    }
    if (const auto start = random_feasible_schedule(inst, rng)) {
      // From random starts, the descent order without the critical-ops-first split.
      LocalSearchOptions flat = o;
      flat.critical_first = false;
      LocalSearchStats st;
      const Schedule out = improve_schedule(inst, *start, flat, &st);
      const bool better = check_result(inst, *start, out, flat, st) < st.start_makespan - kEps;
      // With one device or one microbatch a random order is often optimal already.
      if (inst.num_devices() >= 2 && inst.microbatches >= 2) {
        ++from_random;
        improved_random += better ? 1 : 0;
      }
    }
  }
  std::printf("[ local    ] improved %d of %d best-heuristic starts and %d of %d random starts (D, m >= 2)\n",
              improved_heuristic, from_heuristics, improved_random, from_random);
  EXPECT_GE(from_heuristics, 30);
  EXPECT_GE(from_random, 10);
  // Random lists are far from optimal: the search must find something on most of them.
  EXPECT_GE(improved_random * 2, from_random);
}

// With the swaps on (LocalSearchOptions::offload_swaps = 1; by default from kSwapOps compute ops
// on), on random tight instances that offload, from the best heuristic and from random starts:
// every result passes the validator and is never worse than its start, and some descent steps
// are swaps. By default these instances are below kSwapOps, and no step is one.
TEST(LocalSearch, SwapsKeepTheResultsValidAndTakePart) {
  std::mt19937 rng(31);
  std::int64_t swap_steps = 0, default_swap_steps = 0;
  int runs = 0;
  for (const Instance& inst : random_instances(60, 32, 4, 6)) {
    if (!inst.can_offload()) continue;
    SCOPED_TRACE(label(inst));
    std::vector<Schedule> starts;
    const BestResult best = run_all_heuristics(inst, false);
    if (const HeuristicResult* h = best.best_result()) starts.push_back(*h->schedule);
    if (auto r = random_feasible_schedule(inst, rng)) starts.push_back(std::move(*r));
    for (const Schedule& start : starts) {
      LocalSearchOptions o;
      o.max_evaluations = 600;
      o.offload_swaps = 1;
      LocalSearchStats st;
      check_result(inst, start, improve_schedule(inst, start, o, &st), o, st);
      swap_steps += st.improvements_by_move[static_cast<int>(MoveKind::kOffloadSwap)];
      o.offload_swaps = -1;
      LocalSearchStats plain;
      check_result(inst, start, improve_schedule(inst, start, o, &plain), o, plain);
      default_swap_steps += plain.improvements_by_move[static_cast<int>(MoveKind::kOffloadSwap)];
      ++runs;
    }
  }
  std::printf("[ local    ] %d runs with swaps: %lld descent steps were swaps\n", runs, static_cast<long long>(swap_steps));
  EXPECT_GE(runs, 40);
  EXPECT_GT(swap_steps, 0);
  EXPECT_EQ(default_swap_steps, 0);
  EXPECT_FALSE(default_offload_swaps(kSwapOps - 1));
  EXPECT_TRUE(default_offload_swaps(kSwapOps));
}

// Untried moves first (don't-look bits; by default from kUntriedFirstOps compute ops on): valid
// results never worse than the start on random instances, and where one descent outlasts the
// budget (GPT-3 14.6B on 8 GPUs x 16 microbatches at 4 activations, 384 compute ops, from the
// best heuristic) more descent steps for the same simulations, on each of three seeds.
TEST(LocalSearch, UntriedFirstStaysValidAndTakesMoreStepsPerSimulation) {
  std::mt19937 rng(41);
  for (const Instance& inst : random_instances(40, 42, 4, 6)) {
    SCOPED_TRACE(label(inst));
    const auto start = random_feasible_schedule(inst, rng);
    if (!start) continue;
    LocalSearchOptions o;
    o.max_evaluations = 500;
    o.untried_first = 1;
    LocalSearchStats st;
    check_result(inst, *start, improve_schedule(inst, *start, o, &st), o, st);
  }
  gen::GenerateRequest r;
  r.model = "gpt3-14.6b";
  r.devices = 8;
  r.microbatches = 16;
  r.memory_limit = "4act";
  const Instance inst = gen::generate(gen::resolve(r)).instance;
  const BestResult best = run_all_heuristics(inst, false);
  ASSERT_NE(best.best_result(), nullptr);
  const Schedule& start = *best.best_result()->schedule;
  EXPECT_FALSE(default_untried_first(kUntriedFirstOps - 1));
  EXPECT_TRUE(default_untried_first(kUntriedFirstOps));
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    LocalSearchOptions o;
    o.max_evaluations = 1500;
    o.seed = seed;
    LocalSearchStats plain, untried;
    o.untried_first = 0;
    check_result(inst, start, improve_schedule(inst, start, o, &plain), o, plain);
    o.untried_first = 1;
    check_result(inst, start, improve_schedule(inst, start, o, &untried), o, untried);
    std::printf("[ local    ] seed %d: %lld descent steps plain (%.2f ms), %lld untried first (%.2f ms)\n",
                static_cast<int>(seed), static_cast<long long>(plain.improvements), plain.final_makespan,
                static_cast<long long>(untried.improvements), untried.final_makespan);
    EXPECT_EQ(plain.kicks, 0);  // one descent for the whole budget
    EXPECT_GT(untried.improvements, plain.improvements);
  }
}

// GPipe's lists on 3 uniform stages and 6 microbatches without memory pressure: far from optimal.
Instance uniform_3x6() { return test_support::uniform_instance(3, 6, 1.0, 1.2, 0.8, 0.05); }
Schedule gpipe_lists(const Instance& inst) {
  Built b = GPipe().build(inst);
  EXPECT_TRUE(b.schedule) << b.reason;
  return b.schedule ? *b.schedule : Schedule{};
}

TEST(LocalSearch, ImprovesGPipeWithoutMemoryPressure) {
  // GPipe leaves a bubble of (p-1)(F+B+W)-ish that 1F1B-like orders with W filling the gaps
  // remove; from GPipe's lists the search must find a strictly shorter schedule.
  const Instance inst = uniform_3x6();
  const Schedule start = gpipe_lists(inst);
  LocalSearchOptions o;
  o.max_evaluations = 3000;
  LocalSearchStats st;
  const Schedule out = improve_schedule(inst, start, o, &st);
  const double ms = check_result(inst, start, out, o, st);
  EXPECT_LT(ms, st.start_makespan - 0.5);
  EXPECT_GT(st.improvements, 0);
  EXPECT_GT(st.improvements_by_move[static_cast<int>(MoveKind::kShift)], 0);
  EXPECT_EQ(st.improvements_by_move[static_cast<int>(MoveKind::kOffloadLevel)], 0);  // nothing offloadable
}

// on_new_best reports strictly shorter schedules, each with the makespan the simulator gives
// it, the last one the result; without a callback the result is the same (it only observes).
TEST(LocalSearch, ReportsEachNewBestWithItsMakespan) {
  const Instance inst = uniform_3x6();
  const Schedule start = gpipe_lists(inst);
  LocalSearchOptions o;
  o.max_evaluations = 3000;
  std::vector<double> reported;
  o.on_new_best = [&](const Schedule& s, double makespan) {
    EXPECT_TRUE(check_structure(inst, s).empty());
    EXPECT_NEAR(simulate(inst, s).makespan, makespan, 1e-9);
    if (!reported.empty()) EXPECT_LT(makespan, reported.back() - kTimeEps);
    reported.push_back(makespan);
  };
  LocalSearchStats st;
  improve_schedule(inst, start, o, &st);
  ASSERT_FALSE(reported.empty());
  EXPECT_LT(reported.front(), st.start_makespan - kTimeEps);
  EXPECT_NEAR(reported.back(), st.final_makespan, 1e-9);
  LocalSearchOptions quiet = o;
  quiet.on_new_best = nullptr;
  LocalSearchStats st2;
  improve_schedule(inst, start, quiet, &st2);
  EXPECT_EQ(st2.final_makespan, st.final_makespan);
  EXPECT_EQ(st2.evaluations, st.evaluations);
}

// ---------------------------------------------------------------------------------------------
// 3. Against brute force.

TEST(LocalSearch, NeverBelowTheBruteForceOptimumAndReachesItOften) {
  std::mt19937 gen(20240611), rng(5);
  int cases = 0, not_optimal = 0, improved = 0, reached = 0;
  LocalSearchOptions o;
  o.max_evaluations = 1500;
  for (int i = 0; i < 400 && cases < 24; ++i) {
    test_support::RandomInstanceOptions ro;
    ro.min_devices = i % 5 == 4 ? 1 : 2;
    ro.max_devices = 2;
    ro.min_microbatches = 2;
    ro.max_microbatches = i % 3 == 0 ? 3 : 2;
    ro.tight_memory = i % 2 == 1;
    ro.offloadable_probability = (i / 2) % 2 == 0 ? 0.6 : 0.0;
    Instance inst = test_support::random_instance(gen, ro);
    if (i % 4 == 3) test_support::squeeze_memory(inst, 1.05);
    if (test_support::count_schedules(inst, 30'000) > 30'000) continue;
    inst.name = "tiny-" + std::to_string(i);
    const test_support::BruteForceResult bf = test_support::brute_force_optimum(inst, 30'000);
    ASSERT_FALSE(bf.aborted);
    if (!bf.feasible) continue;
    ++cases;
    SCOPED_TRACE(label(inst));
    std::vector<Schedule> starts;
    const BestResult heuristics = run_all_heuristics(inst, false);
    if (const HeuristicResult* h = heuristics.best_result()) starts.push_back(*h->schedule);
    if (auto s = random_feasible_schedule(inst, rng)) starts.push_back(*s);
    for (const Schedule& start : starts) {
      LocalSearchStats st;
      const Schedule out = improve_schedule(inst, start, o, &st);
      const double ms = check_result(inst, start, out, o, st);
      EXPECT_GE(ms, bf.optimum - kEps) << "below the optimum:" << text(out) << "\nbrute force:" << text(bf.best);
      if (st.start_makespan > bf.optimum + kEps) {
        ++not_optimal;
        if (ms < st.start_makespan - kEps) ++improved;
        if (ms <= bf.optimum + kEps) ++reached;
      }
    }
  }
  std::printf("[ local    ] %d tiny instances; of %d starts above the optimum, %d improved, %d reach it\n", cases,
              not_optimal, improved, reached);
  EXPECT_GE(cases, 15);
  ASSERT_GT(not_optimal, 0);
  EXPECT_GT(improved, 0);
  EXPECT_GT(reached, 0);
  EXPECT_GE(reached * 2, not_optimal);  // at least half of them
}

// ---------------------------------------------------------------------------------------------
// 4. Determinism.

TEST(LocalSearch, SameSeedSameResult) {
  std::mt19937 rng(31);
  int compared = 0, differ_by_seed = 0;
  for (const Instance& inst : random_instances(12, 32, 4, 6)) {
    const auto start = random_feasible_schedule(inst, rng);
    if (!start) continue;
    ++compared;
    LocalSearchOptions o;
    o.max_evaluations = 600;
    o.seed = 99;
    // Every other instance with the moves of the large instances (swaps, untried moves first).
    o.offload_swaps = o.untried_first = compared % 2;
    LocalSearchStats a, b, c;
    const Schedule x = improve_schedule(inst, *start, o, &a);
    const Schedule y = improve_schedule(inst, *start, o, &b);
    EXPECT_EQ(x.devices, y.devices) << label(inst);
    EXPECT_EQ(a.evaluations, b.evaluations);
    EXPECT_EQ(a.improvements, b.improvements);
    EXPECT_EQ(a.kicks, b.kicks);
    EXPECT_EQ(a.final_makespan, b.final_makespan);
    o.seed = 100;
    const Schedule z = improve_schedule(inst, *start, o, &c);
    differ_by_seed += z.devices != x.devices ? 1 : 0;
  }
  EXPECT_GE(compared, 6);
  EXPECT_GT(differ_by_seed, 0);  // the seed is used
}

// Checkpoints only make the simulations faster: from the same start, seed and budget a search
// with the default number (8 from kCheckpointOps compute ops on), with none and with 3 ends
// with the same lists after the same steps, on random instances big enough for the default to
// use them (4-6 devices, 5-8 microbatches, some with offload and tight memory) and on shipped
// ones.
TEST(LocalSearch, CheckpointsChangeNothingButTheTime) {
  EXPECT_EQ(default_checkpoints(kCheckpointOps - 1), 0);
  EXPECT_EQ(default_checkpoints(kCheckpointOps), 8);
  EXPECT_EQ(default_checkpoints(kManyCheckpointOps - 1), 8);
  EXPECT_EQ(default_checkpoints(kManyCheckpointOps), 16);
  std::mt19937 rng(53);
  std::vector<Instance> instances;
  for (Instance& inst : random_instances(40, 57, 6, 8)) {
    if (inst.num_compute_ops() >= kCheckpointOps) {
      instances.push_back(std::move(inst));
    }
  }
  for (const char* name : {"hetero-4x8", "v-4x8", "offload-fast-pcie-4x8", "shared-pcie-4x8"}) {
    instances.push_back(load_instance(std::string(OPTPIPE_SOURCE_DIR) + "/instances/" + name + ".json"));
  }
  int compared = 0, improved = 0;
  for (const Instance& inst : instances) {
    const auto start = random_feasible_schedule(inst, rng);
    if (!start) continue;
    ++compared;
    LocalSearchStats stats[3];
    Schedule out[3];
    const int checkpoints[3] = {-1, 0, 3};
    for (int k = 0; k < 3; ++k) {
      LocalSearchOptions o;
      o.max_evaluations = 1500;
      o.seed = 7;
      o.checkpoints = checkpoints[k];
      out[k] = improve_schedule(inst, *start, o, &stats[k]);
    }
    for (int k = 1; k < 3; ++k) {
      EXPECT_EQ(out[k].devices, out[0].devices) << label(inst) << " checkpoints " << checkpoints[k];
      EXPECT_EQ(stats[k].evaluations, stats[0].evaluations) << label(inst);
      EXPECT_EQ(stats[k].improvements, stats[0].improvements) << label(inst);
      EXPECT_EQ(stats[k].final_makespan, stats[0].final_makespan) << label(inst);
    }
    improved += stats[0].final_makespan < stats[0].start_makespan - kEps ? 1 : 0;
  }
  EXPECT_GE(compared, 8);
  EXPECT_GE(improved, compared / 2);  // the searches move (a search that does nothing compares nothing)
}

// A target (a proven lower bound) stops the search once its best is within kTargetTolerance of
// it: with the makespan a full run reaches as the target, the same trajectory ends at the first
// evaluation that reaches it (and so it does with that target given live), and a start that
// already meets it costs one evaluation.
TEST(LocalSearch, StopsAtItsTarget) {
  std::mt19937 rng(47);
  int stopped_early = 0, compared = 0;
  for (const Instance& inst : random_instances(40, 48, 4, 6)) {
    const auto start = random_feasible_schedule(inst, rng);
    if (!start) continue;
    LocalSearchOptions o;
    o.max_evaluations = 3000;
    LocalSearchStats full, aimed, met;
    improve_schedule(inst, *start, o, &full);
    if (!(full.final_makespan < full.start_makespan - 1e-6)) continue;
    ++compared;
    o.target = full.final_makespan - 0.5 * kTargetTolerance;  // reached within the tolerance
    const Schedule x = improve_schedule(inst, *start, o, &aimed);
    EXPECT_NEAR(aimed.final_makespan, full.final_makespan, 1e-9) << label(inst);
    EXPECT_LE(aimed.evaluations, full.evaluations);
    stopped_early += aimed.evaluations < full.evaluations ? 1 : 0;
    // The same target given live (as a relaxation on another thread gives it): the same run.
    LocalSearchOptions live = o;
    live.target = -std::numeric_limits<double>::infinity();
    const std::atomic<double> proven{o.target};
    live.live_target = &proven;
    LocalSearchStats by_live;
    improve_schedule(inst, *start, live, &by_live);
    EXPECT_EQ(by_live.evaluations, aimed.evaluations) << label(inst);
    EXPECT_NEAR(by_live.final_makespan, aimed.final_makespan, 1e-9);
    o.target = full.start_makespan;
    improve_schedule(inst, *start, o, &met);
    EXPECT_EQ(met.evaluations, 1) << label(inst);
    EXPECT_NEAR(met.final_makespan, met.start_makespan, 1e-9);
  }
  EXPECT_GE(compared, 6);
  EXPECT_GT(stopped_early, 0);
}

// A stall limit (LocalSearchOptions::stall_evaluations) only ends the run early: the run it
// ends is the budget-limited run cut where it stopped (same schedule as a plain run with that
// many evaluations), it stops only after at least that many evaluations without a new best (a
// plain run of that budget plus the limit has the same best), and with a limit larger than the
// budget nothing changes.
TEST(LocalSearch, AStallLimitOnlyCutsTheRunShort) {
  std::mt19937 rng(53);
  int stopped_early = 0, compared = 0, after_new_bests = 0;
  for (const Instance& inst : random_instances(40, 48, 4, 6)) {
    const auto start = random_feasible_schedule(inst, rng);
    if (!start) continue;
    ++compared;
    LocalSearchOptions o;
    o.max_evaluations = 3000;
    o.stall_evaluations = 300;
    LocalSearchStats stalled;
    std::int64_t last_report = -1;  // evaluations when the last shorter best was reported
    o.on_new_best = [&](const Schedule&, double) { last_report = stalled.evaluations; };
    const Schedule x = improve_schedule(inst, *start, o, &stalled);
    o.on_new_best = nullptr;
    EXPECT_LE(stalled.evaluations, o.max_evaluations) << label(inst);
    // Runs that ended for another reason: the budget, or no move applies (tiny instances).
    if (stalled.evaluations >= o.max_evaluations || stalled.evaluations < o.stall_evaluations) continue;
    ++stopped_early;
    // The limit counts from the last new best, not from the start.
    EXPECT_GE(stalled.evaluations, last_report + o.stall_evaluations) << label(inst);
    after_new_bests += stalled.new_best > 0 ? 1 : 0;
    LocalSearchOptions plain = o;
    plain.stall_evaluations = 0;
    plain.max_evaluations = stalled.evaluations;
    LocalSearchStats cut;
    const Schedule y = improve_schedule(inst, *start, plain, &cut);
    EXPECT_EQ(x.devices, y.devices) << label(inst);
    EXPECT_EQ(cut.evaluations, stalled.evaluations);
    // The last new best came at least stall_evaluations before the end: the run cut that much
    // earlier already had it.
    plain.max_evaluations = stalled.evaluations - o.stall_evaluations;
    LocalSearchStats earlier;
    improve_schedule(inst, *start, plain, &earlier);
    EXPECT_EQ(earlier.new_best, stalled.new_best) << label(inst);
    EXPECT_NEAR(earlier.final_makespan, stalled.final_makespan, 1e-9);
    LocalSearchOptions loose = o;
    loose.stall_evaluations = o.max_evaluations + 1;
    plain.max_evaluations = o.max_evaluations;
    LocalSearchStats a, b;
    EXPECT_EQ(improve_schedule(inst, *start, loose, &a).devices, improve_schedule(inst, *start, plain, &b).devices);
    EXPECT_EQ(a.evaluations, b.evaluations);
  }
  EXPECT_GE(compared, 6);
  EXPECT_GT(stopped_early, 0);
  EXPECT_GT(after_new_bests, 0);
}

// ---------------------------------------------------------------------------------------------
// 5. Bad starts.

TEST(LocalSearch, RefusesMalformedOrDeadlockingStarts) {
  const Instance inst = test_support::uniform_instance(2, 2, 1, 1, 1);
  Schedule missing = test_support::lists(inst, {{"F0.0", "F0.1", "B0.0", "W0.0", "B0.1"},
                                           {"F1.0", "B1.0", "W1.0", "F1.1", "B1.1", "W1.1"}});
  EXPECT_THROW(improve_schedule(inst, missing), InputError);
  // Well formed, but a cycle: F1.1 waits for F0.1, which comes after B0.0, which waits for B1.0,
  // which comes after F1.1.
  Schedule cycle = test_support::lists(inst, {{"F0.0", "B0.0", "W0.0", "F0.1", "B0.1", "W0.1"},
                                         {"F1.0", "F1.1", "B1.0", "W1.0", "B1.1", "W1.1"}});
  ASSERT_TRUE(well_formed(inst, cycle));
  ASSERT_FALSE(simulate(inst, cycle).feasible);
  EXPECT_THROW(improve_schedule(inst, cycle), InputError);
}

}  // namespace
}  // namespace optpipe
