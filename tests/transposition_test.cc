// The transposition table (search/transposition.h): its dominance rule checked against
// completions (the proof's claim, on random pairs of search nodes), exact duplicates with
// offload, the table's bookkeeping, and the solver with and without it.
#include "search/transposition.h"
#include "search/fingerprint_set.h"
#include "search/state_store.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <unordered_map>
#include <vector>

#include "bounds/bound_problem.h"
#include "search/candidates.h"
#include "search/solver.h"
#include "model/simulator.h"
#include "tests/test_util.h"

namespace optpipe {
namespace {

// A search node met on a random walk: its key and its simulator state.
struct Visited {
  StateKey key;
  Simulator::Snapshot state;
  Simulator::Step step;  // the decision the state waits for
};

// One random walk of the time-ordered search from the root (every rule-1 candidate allowed,
// none cut by rule 2), recording every decision node; false when it deadlocks.
bool random_walk(const Instance& inst, const BoundProblem& p, bool exact, std::mt19937& rng,
                 std::vector<Visited>& out) {
  Simulator sim(inst);
  sim.start_open();
  Simulator::Step step = sim.advance();
  const std::vector<double> no_heads(static_cast<std::size_t>(p.num_ops()), 0.0);
  std::vector<Candidate> cands;
  CandidateStats stats;
  while (step.kind == Simulator::Step::Kind::kDecision) {
    Visited v;
    build_state_key(p, sim.snapshot(), exact, v.key);
    v.state = sim.snapshot();
    v.step = step;
    out.push_back(std::move(v));
    branch_candidates(inst, p, sim.snapshot(), step.device, step.time, no_heads, false, cands, stats);
    if (cands.empty()) return false;
    sim.append(step.device, cands[std::uniform_int_distribution<std::size_t>(0, cands.size() - 1)(rng)].action);
    step = sim.advance();
  }
  return step.kind == Simulator::Step::Kind::kDone;
}

// Completes the node `from` by a random walk; the complete lists, or nothing on a deadlock. It
// starts with the node's own decision: advancing a state that waits for a decision without
// appending would let that device idle past it, a state the search never makes.
std::optional<Schedule> random_completion(const Instance& inst, const BoundProblem& p, const Visited& from,
                                          std::mt19937& rng) {
  Simulator sim(inst);
  sim.restore(from.state);
  Simulator::Step step = from.step;
  const std::vector<double> no_heads(static_cast<std::size_t>(p.num_ops()), 0.0);
  std::vector<Candidate> cands;
  CandidateStats stats;
  while (step.kind == Simulator::Step::Kind::kDecision) {
    branch_candidates(inst, p, sim.snapshot(), step.device, step.time, no_heads, false, cands, stats);
    if (cands.empty()) return std::nullopt;
    sim.append(step.device, cands[std::uniform_int_distribution<std::size_t>(0, cands.size() - 1)(rng)].action);
    step = sim.advance();
  }
  if (step.kind != Simulator::Step::Kind::kDone) return std::nullopt;
  Schedule sch;
  sch.devices = sim.snapshot().owned.devices;
  return sch;
}

// A's lists followed by what `completion` appends after B's lists.
Schedule graft(const Simulator::Snapshot& a, const Simulator::Snapshot& b, const Schedule& completion) {
  Schedule out;
  out.devices = a.owned.devices;
  for (std::size_t d = 0; d < out.devices.size(); ++d) {
    const auto& full = completion.devices[d];
    out.devices[d].insert(out.devices[d].end(), full.begin() + static_cast<std::ptrdiff_t>(b.owned.devices[d].size()),
                          full.end());
  }
  return out;
}

struct PairCounts {
  int pairs = 0, strict = 0, completions = 0;
};

// For pairs of nodes with equal discrete parts where one dominates the other, every completion
// of the dominated node, grafted onto the dominating one, is feasible and no longer.
void check_pairs(const Instance& inst, bool exact, std::mt19937& rng, PairCounts& n) {
  const BoundProblem p(inst);
  std::vector<Visited> nodes;
  for (int walk = 0; walk < 40; ++walk) random_walk(inst, p, exact, rng, nodes);
  std::map<std::vector<std::int64_t>, std::vector<int>> by_discrete;
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i) by_discrete[nodes[i].key.discrete].push_back(i);
  const SimOptions quiet = SimOptions::quiet();
  for (const auto& [discrete, ids] : by_discrete) {
    for (int ia : ids) {
      for (int ib : ids) {
        if (ia == ib || !dominates(nodes[ia].key, nodes[ib].key, exact)) continue;
        if (nodes[ia].state.owned.devices == nodes[ib].state.owned.devices) continue;  // the same lists
        ++n.pairs;
        if (nodes[ia].key.times != nodes[ib].key.times) ++n.strict;
        for (int c = 0; c < 3; ++c) {
          const std::optional<Schedule> comp_b = random_completion(inst, p, nodes[ib], rng);
          if (!comp_b) continue;
          const Schedule sch_a = graft(nodes[ia].state, nodes[ib].state, *comp_b);
          const SimResult rb = simulate(inst, *comp_b, quiet);
          const SimResult ra = simulate(inst, sch_a, quiet);
          ASSERT_TRUE(rb.feasible);
          ++n.completions;
          ASSERT_TRUE(ra.feasible) << "the dominating node's completion deadlocks: " << ra.reason;
          if (exact) {
            ASSERT_NEAR(ra.makespan, rb.makespan, 1e-9);
          } else {
            ASSERT_LE(ra.makespan, rb.makespan + 1e-9);
          }
        }
      }
    }
  }
}

TEST(Transposition, DominanceHoldsForEveryCompletionWithoutOffload) {
  std::mt19937 rng(7);
  PairCounts n;
  for (int i = 0; i < 120; ++i) {
    test_support::RandomInstanceOptions o;
    o.max_devices = 3;
    o.max_microbatches = 4;
    o.offloadable_probability = 0.0;
    o.tight_memory = i % 2 == 0;
    Instance inst = test_support::random_instance(rng, o);
    if (i % 3 == 0) {  // coarse times make equal and earlier clocks common
      for (Stage& st : inst.stages) {
        st.forward = std::round(st.forward);
        st.backward = std::round(st.backward);
        st.weight = std::round(st.weight);
      }
    }
    ASSERT_FALSE(inst.can_offload());
    SCOPED_TRACE("instance " + std::to_string(i));
    check_pairs(inst, false, rng, n);
    if (HasFatalFailure()) return;
  }
  std::printf("[ tt       ] %d dominating pairs (%d strictly earlier), %d completions checked\n", n.pairs, n.strict,
              n.completions);
  EXPECT_GT(n.pairs, 500);
  EXPECT_GT(n.strict, 100);
  EXPECT_GT(n.completions, 1000);
}

TEST(Transposition, ExactDuplicatesHaveTheSameFuturesWithOffload) {
  std::mt19937 rng(11);
  PairCounts n;
  for (int i = 0; i < 150; ++i) {
    test_support::RandomInstanceOptions o;
    o.max_devices = 3;
    o.max_microbatches = 4;
    o.offloadable_probability = 1.0;
    o.tight_memory = true;
    Instance inst = test_support::random_instance(rng, o);
    if (!inst.can_offload()) continue;
    for (Stage& st : inst.stages) {  // coarse times: duplicates are common
      st.forward = std::round(st.forward);
      st.backward = std::round(st.backward);
      st.weight = std::round(st.weight);
    }
    SCOPED_TRACE("instance " + std::to_string(i));
    check_pairs(inst, true, rng, n);
    if (HasFatalFailure()) return;
  }
  std::printf("[ tt       ] %d duplicate pairs, %d completions checked\n", n.pairs, n.completions);
  // 1330 pairs before the keys wrote past times as now (3786 after): the normalisation is
  // exercised, and every pair's completions agree.
  EXPECT_GT(n.pairs, 2500);
  EXPECT_GT(n.completions, 200);
}

StateKey key_of(std::vector<std::int64_t> discrete, std::vector<double> times) {
  StateKey k;
  k.discrete = std::move(discrete);
  k.times = std::move(times);
  k.hash = 42;  // all in one bucket: the table must still tell the keys apart
  return k;
}

TEST(Transposition, TableKeepsTheBestStatesOfAKey) {
  TranspositionTable table(false, 1e9);
  EXPECT_FALSE(table.dominated_or_insert(key_of({1, 2}, {5, 5})));
  EXPECT_TRUE(table.dominated_or_insert(key_of({1, 2}, {5, 5})));   // a duplicate
  EXPECT_TRUE(table.dominated_or_insert(key_of({1, 2}, {6, 5})));   // later
  EXPECT_FALSE(table.dominated_or_insert(key_of({1, 3}, {6, 5})));  // another discrete state
  EXPECT_FALSE(table.dominated_or_insert(key_of({1, 2}, {4, 7})));  // incomparable: kept too
  EXPECT_EQ(table.stored(), 3);
  EXPECT_FALSE(table.dominated_or_insert(key_of({1, 2}, {4, 4})));  // dominates both: replaces them
  EXPECT_EQ(table.stored(), 2);
  EXPECT_TRUE(table.dominated_or_insert(key_of({1, 2}, {5, 5})));
}

TEST(Transposition, ExactTableCutsOnlyEqualStates) {
  TranspositionTable table(true, 1e9);
  EXPECT_FALSE(table.dominated_or_insert(key_of({1}, {5, 5})));
  EXPECT_FALSE(table.dominated_or_insert(key_of({1}, {6, 5})));
  EXPECT_FALSE(table.dominated_or_insert(key_of({1}, {4, 4})));
  EXPECT_TRUE(table.dominated_or_insert(key_of({1}, {6, 5})));
  EXPECT_EQ(table.stored(), 3);
}

TEST(Transposition, TableStopsStoringAtItsBudgetAndCapsStatesPerKey) {
  TranspositionTable none(false, 0);
  EXPECT_FALSE(none.dominated_or_insert(key_of({1}, {1})));
  EXPECT_FALSE(none.dominated_or_insert(key_of({1}, {1})));  // nothing was stored
  EXPECT_EQ(none.stored(), 0);
  EXPECT_TRUE(none.full());
  TranspositionTable capped(false, 1e9);
  for (int i = 0; i < 20; ++i) capped.dominated_or_insert(key_of({1}, {static_cast<double>(i), 20.0 - i}));
  EXPECT_EQ(capped.stored(), static_cast<std::int64_t>(TranspositionTable::kMaxPerKey));
  // The exact table stores fingerprints (about 48 bytes each) until the budget is spent.
  TranspositionTable exact(true, 100);
  for (int i = 0; i < 10; ++i) exact.dominated_or_insert(key_of({1}, {static_cast<double>(i)}));
  EXPECT_EQ(exact.stored(), 3);
  EXPECT_TRUE(exact.full());
  EXPECT_TRUE(exact.dominated_or_insert(key_of({1}, {2.0})));    // stored before the budget ran out
  EXPECT_FALSE(exact.dominated_or_insert(key_of({1}, {5.0})));   // seen, but never stored
}

TEST(Transposition, SolverFindsTheSameOptimumWithAndWithoutIt) {
  std::mt19937 rng(5);
  int compared = 0;
  std::int64_t cut = 0, nodes_with = 0, nodes_without = 0;
  for (int i = 0; i < 60; ++i) {
    test_support::RandomInstanceOptions o;
    o.max_devices = 3;
    o.max_microbatches = 3 + i % 2;
    o.offloadable_probability = i % 2 == 0 ? 0.0 : 0.7;
    o.tight_memory = i % 3 != 0;
    const Instance inst = test_support::random_instance(rng, o);
    SolveOptions opt;
    opt.threads = 1;
    opt.node_limit = 30000;
    const SolveResult with = solve(inst, {}, opt);
    opt.transposition = false;
    const SolveResult without = solve(inst, {}, opt);
    SCOPED_TRACE("instance " + std::to_string(i));
    if (with.status != SolveResult::Status::kOptimal || without.status != SolveResult::Status::kOptimal) {
      EXPECT_EQ(with.status == SolveResult::Status::kInfeasible, without.status == SolveResult::Status::kInfeasible);
      continue;
    }
    EXPECT_NEAR(with.makespan, without.makespan, 1e-9);
    EXPECT_EQ(without.stats.pruned_transposition, 0);
    cut += with.stats.pruned_transposition;
    nodes_with += with.stats.nodes;
    nodes_without += without.stats.nodes;
    ++compared;
  }
  std::printf("[ tt       ] %d optima compared; %lld nodes with the table (%lld cut by it), %lld without\n",
              compared, static_cast<long long>(nodes_with), static_cast<long long>(cut),
              static_cast<long long>(nodes_without));
  EXPECT_GT(compared, 35);
  EXPECT_GT(cut, 0);
  EXPECT_LE(nodes_with, nodes_without);
}

}  // namespace
}  // namespace optpipe

namespace optpipe {
namespace {

// The flat fingerprint set (search/fingerprint_set.h) against std::set on random inserts and
// lookups, with many keys sharing their low bits (as in one shard of the table), the all-zero
// fingerprint (the empty slot's value, which the set stores as {0, 1}: the plain set does the
// same here) and growth from empty through several doublings.
TEST(FingerprintSet, AgreesWithAPlainSet) {
  std::mt19937_64 rng(7);
  auto plain_key = [](const FingerprintSet::Fingerprint& f) {
    return std::pair<std::uint64_t, std::uint64_t>{f.a, f.a == 0 && f.b == 0 ? 1 : f.b};
  };
  for (int round = 0; round < 4; ++round) {
    FingerprintSet flat;
    std::set<std::pair<std::uint64_t, std::uint64_t>> plain;
    std::vector<FingerprintSet::Fingerprint> inserted;
    for (int k = 0; k < 20000; ++k) {
      FingerprintSet::Fingerprint f;
      const int kind = static_cast<int>(rng() % 10);
      if (kind == 0 && !inserted.empty()) {
        f = inserted[rng() % inserted.size()];  // a repeat
      } else if (kind == 1) {
        f = {(rng() % 4) * 64, rng() % 3};  // few distinct values, zero among them
      } else {
        f = {(rng() << 6) | static_cast<std::uint64_t>(round), rng()};  // one shard's low bits
      }
      ASSERT_EQ(flat.contains(f), plain.count(plain_key(f)) != 0);
      const bool added = plain.insert(plain_key(f)).second;
      ASSERT_EQ(flat.insert(f), added);
      if (added) inserted.push_back(f);
      ASSERT_TRUE(flat.contains(f));
      ASSERT_EQ(flat.size(), plain.size());
      ASSERT_LE(10 * flat.size(), 7 * flat.capacity());
    }
    for (int k = 0; k < 20000; ++k) {  // fresh lookups: misses, save a 2^-64 chance
      const FingerprintSet::Fingerprint f{rng(), rng()};
      EXPECT_EQ(flat.contains(f), plain.count(plain_key(f)) != 0);
    }
  }
}

}  // namespace
}  // namespace optpipe

namespace optpipe {
namespace {

// The table without offload (whole states in search/state_store.h) against the plain version of
// its rule: a multimap from hash to states, each new state cut when a stored one with the same
// discrete part has every time no later, stored states it beats in every time forgotten, at most
// kMaxPerKey incomparable ones per discrete part. Random states over a few discrete parts and
// hashes (so that chains hold several parts, and removals hit the first, middle and last of a
// chain), with coarse times so that ties and dominance in both directions are common.
TEST(StateStore, TheTableAgreesWithAPlainMultimap) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 6; ++round) {
    TranspositionTable table(false, 1e12);
    std::unordered_multimap<std::uint64_t, StateKey> plain;
    std::int64_t plain_stored = 0;
    for (int k = 0; k < 6000; ++k) {
      StateKey key;
      const int part = static_cast<int>(rng() % 12);
      key.hash = static_cast<std::uint64_t>(part % 5) * 64 + static_cast<std::uint64_t>(round);  // parts share hashes
      key.discrete.assign(static_cast<std::size_t>(1 + part % 3), part);
      key.times.resize(static_cast<std::size_t>(2 + part % 2));
      for (double& t : key.times) t = static_cast<double>(rng() % 4);
      // The plain rule.
      bool cut = false;
      std::size_t same_key = 0;
      auto range = plain.equal_range(key.hash);
      for (auto it = range.first; it != range.second && !cut;) {
        if (dominates(it->second, key, false)) {
          cut = true;
          break;
        }
        if (it->second.discrete == key.discrete) {
          if (dominates(key, it->second, false)) {
            it = plain.erase(it);
            --plain_stored;
            continue;
          }
          ++same_key;
        }
        ++it;
      }
      if (!cut && same_key < TranspositionTable::kMaxPerKey) {
        plain.emplace(key.hash, key);
        ++plain_stored;
      }
      ASSERT_EQ(table.dominated_or_insert(key), cut) << "round " << round << ", state " << k;
      ASSERT_EQ(table.stored(), plain_stored) << "round " << round << ", state " << k;
    }
  }
}

// The store alone: chains in insertion order reversed, removal anywhere in a chain, the space of
// a removed state reused by one of the same sizes, and many hashes through several doublings.
TEST(StateStore, ChainsRemovalsAndGrowth) {
  StateStore store;
  auto key = [](std::uint64_t hash, std::int64_t tag, std::size_t n) {
    StateKey k;
    k.hash = hash;
    k.discrete.assign(n, tag);
    k.times.assign(n + 1, static_cast<double>(tag));
    return k;
  };
  auto chain = [&](std::uint64_t hash) {
    std::vector<std::int64_t> tags;
    for (std::uint32_t i = store.first(hash); i != StateStore::kNone; i = store.next(i)) {
      const StateStore::View v = store.view(i);
      EXPECT_EQ(v.hash, hash);
      EXPECT_EQ(v.times_size, v.discrete_size + 1);
      EXPECT_EQ(v.times[0], static_cast<double>(v.discrete[0]));
      tags.push_back(v.discrete[0]);
    }
    return tags;
  };
  for (std::int64_t t = 1; t <= 4; ++t) store.insert(key(7, t, 2));
  EXPECT_EQ(chain(7), (std::vector<std::int64_t>{4, 3, 2, 1}));
  // Remove the middle (3: after 4), then the first (4), then the last (1: after 2).
  std::uint32_t first = store.first(7);
  store.remove(7, store.next(first), first);
  EXPECT_EQ(chain(7), (std::vector<std::int64_t>{4, 2, 1}));
  store.remove(7, store.first(7), StateStore::kNone);
  EXPECT_EQ(chain(7), (std::vector<std::int64_t>{2, 1}));
  first = store.first(7);
  store.remove(7, store.next(first), first);
  EXPECT_EQ(chain(7), (std::vector<std::int64_t>{2}));
  EXPECT_EQ(store.size(), 1u);
  store.insert(key(7, 5, 2));  // reuses a removed state's space
  store.insert(key(7, 6, 3));  // another size
  EXPECT_EQ(chain(7), (std::vector<std::int64_t>{6, 5, 2}));
  for (std::uint64_t h = 100; h < 3100; ++h) store.insert(key(h * 64, static_cast<std::int64_t>(h), 1 + h % 3));
  for (std::uint64_t h = 100; h < 3100; ++h) {
    EXPECT_EQ(chain(h * 64), (std::vector<std::int64_t>{static_cast<std::int64_t>(h)}));
  }
  EXPECT_EQ(chain(7), (std::vector<std::int64_t>{6, 5, 2}));
  EXPECT_EQ(store.first(8), StateStore::kNone);
  EXPECT_EQ(store.size(), 3003u);
}

// Shared discrete values: a state inserted with a stored state's discrete values points at them
// (no copy), reads them back, and keeps them when that state is removed and its record and times
// go to a state with other discrete values of the same sizes.
TEST(StateStore, SharedDiscreteValuesOutliveTheStateThatStoredThem) {
  StateStore store;
  StateKey a;
  a.hash = 11;
  a.discrete = {1, 2, 3};
  a.times = {0.5, 0.25};
  store.insert(a);
  const std::uint32_t ia = store.first(11);
  StateKey b = a;
  b.times = {0.25, 0.5};
  store.insert(b, store.view(ia).discrete);
  const std::uint32_t ib = store.first(11);
  ASSERT_NE(ia, ib);
  EXPECT_EQ(store.view(ib).discrete, store.view(ia).discrete);  // shared, not copied
  // A removes; C (other discrete values, the same sizes) takes A's record and times.
  store.remove(11, ia, ib);
  StateKey c;
  c.hash = 11;
  c.discrete = {7, 8, 9};
  c.times = {1.5, 2.5};
  store.insert(c);
  std::vector<std::vector<std::int64_t>> discretes;
  std::vector<std::vector<double>> times;
  for (std::uint32_t i = store.first(11); i != StateStore::kNone; i = store.next(i)) {
    const StateStore::View v = store.view(i);
    discretes.emplace_back(v.discrete, v.discrete + v.discrete_size);
    times.emplace_back(v.times, v.times + v.times_size);
  }
  EXPECT_EQ(discretes, (std::vector<std::vector<std::int64_t>>{{7, 8, 9}, {1, 2, 3}}));
  EXPECT_EQ(times, (std::vector<std::vector<double>>{{1.5, 2.5}, {0.25, 0.5}}));
}

}  // namespace
}  // namespace optpipe
