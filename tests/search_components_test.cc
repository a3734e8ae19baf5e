// The branch-and-bound's components (search/solver.h lists them) against simpler, obviously
// correct versions: the node pool against a sorted list, the memos against a plain list of every
// entry, the shared state's rules one by one, and the statistics table against its members.
#include <algorithm>
#include <atomic>
#include <limits>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/sanitized.h"
#include "tests/test_paths.h"

#include "model/simulator.h"
#include "heuristics/registry.h"
#include "instances/generator/generate.h"
#include "instances/generator/generate_request.h"
#include "model/instance_io.h"
#include "search/node_pool.h"
#include "search/solver.h"
#include "search/relaxation_memo.h"
#include "search/search_shared.h"
#include "search/search_stats.h"

namespace optpipe {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

NodePtr node(double bound, int depth) {
  auto n = std::make_unique<SearchNode>();
  n->bound = bound;
  n->depth = depth;
  n->path.assign(static_cast<std::size_t>(depth), 0u);
  return n;
}

// The pool pops in NodeOrder (smallest bound, then the deeper node), as a list sorted by that
// order would; drop_at_or_above removes exactly the nodes a filter of that list removes.
TEST(NodePool, PopsInBoundOrderAndDropsLikeAFilteredSortedList) {
  std::mt19937 rng(7);
  for (int round = 0; round < 50; ++round) {
    NodePool pool(2);
    std::vector<std::pair<double, int>> reference;  // (bound, depth)
    std::uniform_int_distribution<int> bound(0, 20), depth(0, 9);
    const int n = 1 + round * 3;
    for (int k = 0; k < n; ++k) {
      const double b = bound(rng);
      const int d = depth(rng);
      pool.push(node(b, d));
      reference.emplace_back(b, d);
    }
    const double cutoff = bound(rng);
    const NodePool::Dropped dropped = pool.drop_at_or_above(cutoff);
    std::size_t expected_drops = 0;
    double smallest = kInf;
    for (const auto& [b, d] : reference) {
      if (b >= cutoff) ++expected_drops, smallest = std::min(smallest, b);
    }
    std::erase_if(reference, [&](const auto& e) { return e.first >= cutoff; });
    EXPECT_EQ(dropped.count, expected_drops);
    EXPECT_EQ(dropped.smallest, smallest);
    ASSERT_EQ(pool.size(), reference.size());
    std::sort(reference.begin(), reference.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second > b.second;
    });
    for (const auto& [b, d] : reference) {
      NodePtr got = pool.pop(0);
      ASSERT_TRUE(got);
      EXPECT_EQ(got->bound, b);
      EXPECT_EQ(got->depth, d);
      pool.release(0);
    }
    EXPECT_FALSE(pool.pop(0));
    EXPECT_TRUE(pool.finished());
  }
}

// With a floor (set_floor) the pool pops like a list sorted by (max(bound, proven + tie), the
// deeper first, the smaller bound), nodes pushed before and after it alike; and what it reports
// as its smallest bound is never above max(the true smallest, proven), and is the true smallest
// where that lies above the floor.
TEST(NodePool, BelowAFloorBoundsAreTiesTheDeeperFirst) {
  std::mt19937 rng(11);
  for (int round = 0; round < 50; ++round) {
    NodePool pool(1);
    std::vector<std::pair<double, int>> reference;  // (bound, depth)
    std::uniform_int_distribution<int> bound(0, 20), depth(0, 9);
    const int n = 1 + round * 3;
    const double proven = bound(rng), tie = 0.5 * (round % 3);  // 0, 0.5 or 1
    for (int k = 0; k < n; ++k) {
      if (k == n / 2) pool.set_floor(proven, tie);
      const double b = bound(rng);
      const int d = depth(rng);
      pool.push(node(b, d));
      reference.emplace_back(b, d);
    }
    if (n == 1) pool.set_floor(proven, tie);
    const double floor = proven + tie;
    std::sort(reference.begin(), reference.end(), [&](const auto& a, const auto& b) {
      const double ka = std::max(a.first, floor), kb = std::max(b.first, floor);
      if (ka != kb) return ka < kb;
      if (a.second != b.second) return a.second > b.second;
      return a.first < b.first;
    });
    for (std::size_t i = 0; i < reference.size(); ++i) {
      double least = kInf;
      for (std::size_t j = i; j < reference.size(); ++j) least = std::min(least, reference[j].first);
      const double reported = pool.min_bound(kInf);
      EXPECT_LE(reported, std::max(least, proven));
      if (least > floor) EXPECT_EQ(reported, least);
      NodePtr got = pool.pop(0);
      ASSERT_TRUE(got);
      EXPECT_EQ(got->bound, reference[i].first) << "pop " << i;
      EXPECT_EQ(got->depth, reference[i].second) << "pop " << i;
      pool.release(0);
    }
    EXPECT_FALSE(pool.pop(0));
  }
  // pop_many: the working bound is the least of what it took, not the first's.
  NodePool pool(1);
  pool.push(node(4, 2));
  pool.push(node(1, 1));
  pool.set_floor(5, 0);
  const std::vector<NodePtr> took = pool.pop_many(0, 2, false, kInf);
  ASSERT_EQ(took.size(), 2u);
  EXPECT_EQ(took.front()->depth, 2);  // the deeper first: both count as 5
  EXPECT_EQ(pool.min_bound(kInf), 1);
  pool.release(0);
}

// What a worker holds counts in the bound until it releases it; the search is not finished
// while a worker is busy, even with an empty heap.
TEST(NodePool, WorkingBoundsCountUntilReleased) {
  NodePool pool(2);
  pool.push(node(5, 1));
  pool.push(node(3, 1));
  NodePtr held = pool.pop(1);
  ASSERT_EQ(held->bound, 3);
  EXPECT_EQ(pool.min_bound(kInf), 3);  // the held node, not the open 5
  EXPECT_EQ(pool.min_bound(2), 2);     // capped
  pool.lower_working_bound(1, 2.5);    // a child with a smaller bound
  EXPECT_EQ(pool.min_bound(kInf), 2.5);
  pool.lower_working_bound(1, 4);      // lower only
  EXPECT_EQ(pool.min_bound(kInf), 2.5);
  std::vector<NodePtr> more = pool.pop_many(0, 4, false, kInf);
  ASSERT_EQ(more.size(), 1u);
  EXPECT_FALSE(pool.finished());
  pool.release(1);
  EXPECT_EQ(pool.min_bound(kInf), 5);  // worker 0 still holds the 5
  pool.release(0);
  EXPECT_TRUE(pool.finished());
  EXPECT_EQ(pool.min_bound(kInf), kInf);
}

// Many threads pushing and popping lose no node and pop each exactly once.
TEST(NodePool, ConcurrentPushAndPopLoseNothing) {
  NodePool pool(4);
  std::atomic<int> popped{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 500; ++k) pool.push(node(k % 17, t));
      for (;;) {
        NodePtr n = pool.pop(t);
        if (!n) break;
        ++popped;
        pool.release(t);
      }
    });
  }
  for (auto& th : threads) th.join();
  while (NodePtr n = pool.pop(0)) ++popped, pool.release(0);
  EXPECT_EQ(popped.load(), 2000);
}

TEST(SharedSearchState, OffersOnlyBetterIncumbentsAndTheFirstStopReasonWins) {
  SharedSearchState s(0.0, -1);
  EXPECT_EQ(s.incumbent(), kInf);
  EXPECT_EQ(s.cutoff(), kInf);
  Schedule a;
  a.instance = "a";
  EXPECT_TRUE(s.offer(a, 10, "first"));
  EXPECT_FALSE(s.offer(a, 10, "tie"));                  // not better by more than kTimeEps
  EXPECT_FALSE(s.offer(a, 10 - kTimeEps / 2, "hair"));  // within the tolerance
  EXPECT_TRUE(s.offer(a, 9, "second"));
  EXPECT_EQ(s.best_origin(), "second");
  EXPECT_DOUBLE_EQ(s.cutoff(), 9 - kTimeEps);
  s.raise_proven(4);
  s.raise_proven(3);  // only raised
  EXPECT_EQ(s.proven_bound(), 4);
  s.request_stop(kTimeLimit);
  s.request_stop(kProven);
  EXPECT_TRUE(s.stopping());
  EXPECT_EQ(s.stop_code(), kTimeLimit);
}

// An incumbent that meets the proven bound ends the search at once, also where the bound is a
// relaxation's value a hair below it (then the bound is lifted to it); one above it does not.
TEST(SharedSearchState, AnIncumbentAtTheProvenBoundStopsTheSearch) {
  SharedSearchState s(0.0, -1);
  Schedule a;
  s.raise_proven(10 - 1e-7);
  EXPECT_TRUE(s.offer(a, 10.5, "warm start"));
  EXPECT_FALSE(s.stopping());
  EXPECT_TRUE(s.offer(a, 10 + 2 * kTimeEps, "better"));  // within kRelaxationTolerance of the bound
  EXPECT_TRUE(s.stopping());
  EXPECT_EQ(s.stop_code(), kProven);
  EXPECT_EQ(s.proven_bound(), 10 + 2 * kTimeEps);

  SharedSearchState t(0.0, -1);
  t.raise_proven(10);
  EXPECT_TRUE(t.offer_from_tree(Schedule{}, 10 + 2 * kRelaxationTolerance));
  EXPECT_FALSE(t.stopping());
  EXPECT_TRUE(t.offer_from_tree(Schedule{}, 10));
  EXPECT_EQ(t.stop_code(), kProven);
}

TEST(SharedSearchState, GapCutsAreRememberedOnlyWithAGapAndTheNodeLimitStops) {
  SharedSearchState exact(0.0, 3);
  Schedule sch;
  exact.offer(sch, 100, "x");
  exact.note_cut(95);
  EXPECT_EQ(exact.gap_cut_bound(), kInf);  // without a gap a cut node can never beat the incumbent
  exact.count_node();
  exact.count_node();
  EXPECT_FALSE(exact.stopping());
  exact.count_node();
  EXPECT_TRUE(exact.stopping());
  EXPECT_EQ(exact.stop_code(), kNodeLimit);

  SharedSearchState gap(0.1, -1);
  gap.offer(sch, 100, "x");
  EXPECT_DOUBLE_EQ(gap.cutoff(), 90 - kTimeEps);
  gap.note_cut(95);
  gap.note_cut(92);
  gap.note_cut(100);  // not below the incumbent: nothing to remember
  EXPECT_EQ(gap.gap_cut_bound(), 92);
}

// With a time quantum every makespan is a multiple of it: a node is cut half a quantum below the
// incumbent (or above the target's multiple), proven bounds round up to a multiple, and a bound
// that rounds up to the incumbent is no gap cut.
TEST(SharedSearchState, WithATimeQuantumCutsHalfAQuantumBelowAndRoundsBoundsUp) {
  SharedSearchState s(0.0, -1);
  s.set_time_quantum(0.01);
  EXPECT_EQ(s.cutoff(), kInf);
  Schedule a;
  s.offer(a, 33.32, "x");
  EXPECT_NEAR(s.cutoff(), 33.315, 1e-12);  // a node bounded by 33.311 holds nothing below 33.32
  s.raise_proven(33.308);
  EXPECT_NEAR(s.proven_bound(), 33.31 - kTimeEps, 1e-12);
  EXPECT_LE(s.proven_bound(), 33.31);  // never above a makespan of exactly 33.31
  s.raise_proven(33.31 - 1e-7);        // a relaxation's value less its hair: the same multiple
  EXPECT_NEAR(s.proven_bound(), 33.31 - kTimeEps, 1e-12);
  EXPECT_FALSE(s.stopping());
  s.raise_proven(33.3101);  // rounds up to the incumbent ...
  EXPECT_TRUE(s.offer(a, 33.32 - 1e-6, "y"));  // ... which an offer at it (within the tolerance) then proves
  EXPECT_EQ(s.stop_code(), kProven);

  SharedSearchState t(0.0, -1);
  t.set_time_quantum(0.01);
  t.set_target(33.3);
  EXPECT_NEAR(t.cutoff(), 33.305, 1e-12);  // schedules of at most 33.30 wanted
  t.set_target(33.32 - 2 * kTimeEps);      // just below a multiple: at most the one below it
  EXPECT_NEAR(t.cutoff(), 33.315, 1e-12);
  SharedSearchState plain(0.0, -1);
  plain.set_target(33.3);
  EXPECT_DOUBLE_EQ(plain.cutoff(), 33.3 + kTimeEps);
  plain.raise_proven(33.308);
  EXPECT_EQ(plain.proven_bound(), 33.308);

  SharedSearchState gap(0.1, -1);
  gap.set_time_quantum(0.1);
  gap.offer(a, 100, "x");
  EXPECT_DOUBLE_EQ(gap.cutoff(), 90 - kTimeEps);  // the gap's cut is the lower one here
  gap.note_cut(99.96);                            // rounds up to 100: cut by the quantum, exactly
  EXPECT_EQ(gap.gap_cut_bound(), kInf);
  gap.note_cut(95);
  EXPECT_EQ(gap.gap_cut_bound(), 95);
}

// The history memo keeps the first value per key up to its size.
TEST(RelaxationMemo, HistoryMemoIsAMapUpToItsSize) {
  HistoryMemo memo(2);
  EXPECT_FALSE(memo.find({1.0}));
  memo.insert({1.0}, 5);
  memo.insert({2.0}, 6);
  memo.insert({3.0}, 7);  // full
  EXPECT_EQ(*memo.find({1.0}), 5);
  EXPECT_EQ(*memo.find({2.0}), 6);
  EXPECT_FALSE(memo.find({3.0}));
}

// The monotone memo's answers against a scan of every entry stored for the key (while fewer
// than kEntriesPerKey, nothing is recycled, so the scan sees what the memo holds).
TEST(RelaxationMemo, MonotoneAnswersEqualAScanOfTheEntries) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> small(0, 4);
  for (int round = 0; round < 200; ++round) {
    MonotoneMemo memo(1 << 10, 1 << 20);
    struct E {
      std::vector<double> params;
      double lower, upper;
    };
    std::vector<E> entries;
    const int n = 1 + small(rng) * 3;  // at most 13 < kEntriesPerKey
    const double inf = std::numeric_limits<double>::infinity();
    for (int k = 0; k < n; ++k) {
      const std::vector<double> params{double(small(rng)), double(small(rng))};
      const double v = double(1 + small(rng));
      switch (small(rng) % 3) {
        case 0:  // an exact value: both bounds
          memo.insert({7.0}, params, v, true);
          entries.push_back({params, v, v});
          break;
        case 1:  // a lower bound only (a search that proved the cutoff)
          memo.insert({7.0}, params, v, false);
          entries.push_back({params, v, inf});
          break;
        default:  // an upper bound only (a relaxed schedule found below the cutoff)
          memo.insert_bounds({7.0}, params, 0.0, v);
          entries.push_back({params, 0.0, v});
      }
    }
    const std::vector<double> q{double(small(rng)), double(small(rng))};
    const double cutoff = 1 + small(rng);
    double known = 0;
    bool hopeless = false;
    for (const E& e : entries) {
      const bool below = e.params[0] <= q[0] && e.params[1] <= q[1];
      const bool above = q[0] <= e.params[0] && q[1] <= e.params[1];
      if (below) known = std::max(known, e.lower);
      if (above && e.upper < cutoff - 1e-6) hopeless = true;
    }
    const MonotoneMemo::Answer a = memo.find({7.0}, q, cutoff);
    EXPECT_EQ(a.known, known) << "round " << round;
    EXPECT_EQ(a.hopeless, hopeless) << "round " << round;
    EXPECT_EQ(memo.find({8.0}, q, cutoff).known, 0);  // another key knows nothing
  }
}

// merge() adds every counter of the table; for_each_counter walks each exactly once.
TEST(SolveStats, MergeAndTheWalkCoverEveryCounter) {
  SolveStats a, b;
  int k = 0;
  std::vector<std::string> names;
#define OPTPIPE_TEST_SET(name, what) a.name = ++k, b.name = 100 * k;
  OPTPIPE_SEARCH_COUNTERS(OPTPIPE_TEST_SET)
#undef OPTPIPE_TEST_SET
  b.bound_seconds = 1.5;
  b.count_node(3);
  a.merge(b);
  k = 0;
  a.for_each_counter([&](const char* name, std::int64_t value, const char* what) {
    ++k;
    names.push_back(name);
    EXPECT_FALSE(std::string(what).empty()) << name;
    const std::int64_t expected = k + 100 * k + (std::string(name) == "nodes" ? 1 : 0);
    EXPECT_EQ(value, expected) << name;
  });
  EXPECT_GT(k, 20);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end());
  EXPECT_EQ(a.bound_seconds, 1.5);
  ASSERT_EQ(a.nodes_by_depth.size(), 4u);
  EXPECT_EQ(a.nodes_by_depth[3], 1);
}

// With a pool budget too small for the tree, the workers keep children out of the pool, count
// it, and the search stays sound: the same bound never above the incumbent, the same proof on a
// small instance as with the default budget.
TEST(NodePool, AFullPoolIsCountedAndTheSearchStaysExact) {
  const Instance inst = load_instance(std::string(OPTPIPE_SOURCE_DIR) + "/instances/gpt-8x24-tight.json");
  SolveOptions tight;
  tight.threads = 1;
  tight.node_limit = 3000;
  tight.pool_memory_bytes = 1;  // room for the minimum, 100 open nodes
  std::vector<Schedule> warm;
  for (const HeuristicResult& h : run_all_heuristics(inst).results) {
    if (h.ok()) warm.push_back(*h.schedule);
  }
  const SolveResult r = solve(inst, warm, tight);
  EXPECT_GT(r.stats.pool_full, 0);
  ASSERT_TRUE(r.schedule);
  EXPECT_LE(r.bound, r.makespan + 1e-9);
  SolveOptions roomy = tight;
  roomy.pool_memory_bytes = 1e9;
  EXPECT_EQ(solve(inst, warm, roomy).stats.pool_full, 0);
  // A small instance proven both ways, to the same optimum.
  const Instance v = load_instance(std::string(OPTPIPE_SOURCE_DIR) + "/instances/v-4x8.json");
  SolveOptions a, b;
  a.threads = b.threads = 1;
  a.pool_memory_bytes = 1;
  a.stage_relaxation = b.stage_relaxation = false;  // make it search
  std::vector<Schedule> v_warm;  // an incumbent to prune against, as `optpipe solve` has
  for (const HeuristicResult& h : run_all_heuristics(v).results) {
    if (h.ok()) v_warm.push_back(*h.schedule);
  }
  const SolveResult ra = solve(v, v_warm, a), rb = solve(v, v_warm, b);
  ASSERT_EQ(ra.status, SolveResult::Status::kOptimal);
  ASSERT_EQ(rb.status, SolveResult::Status::kOptimal);
  EXPECT_GT(ra.stats.pool_full, 0);
  EXPECT_NEAR(ra.makespan, rb.makespan, 1e-9);
}

// The relaxations' searches at the nodes keep to their budget (stage_relaxations.h): past it
// they are answered from the memos only. On this instance most of them cut nothing and a third
// hit their node limit; without the budget these 2000 nodes made 1302 searches (7.4 s), with it
// 109 (2.2 s).
TEST(StageRelaxations, TheSearchesAtTheNodesKeepToTheirBudget) {
  // Which stages the nodes ask is what the root's relaxation finishes in its time budget.
  SKIP_UNDER_SANITIZERS("the root's relaxation gets a wall-time budget");
  gen::GenerateRequest req;
  req.model = "gpt3-14.6b";
  req.devices = 6;
  req.microbatches = 12;
  req.memory_limit = "4act";
  const Instance inst = gen::generate(gen::resolve(req)).instance;
  std::vector<Schedule> warm;
  for (const HeuristicResult& h : run_all_heuristics(inst, false).results) {
    if (h.ok()) warm.push_back(*h.schedule);
  }
  SolveOptions o;
  o.threads = 1;
  o.node_limit = 2000;
  o.time_limit = 40;  // the root's relaxation gets 2 s
  const SolveResult r = solve(inst, warm, o);
  EXPECT_GE(r.stats.relaxation_over_budget, 1);
  EXPECT_GT(r.stats.relaxation_calls, 0);
  EXPECT_LE(r.stats.relaxation_calls + r.stats.node_relaxation_calls, 400);
}

// The root tries the relaxation only up to 16 microbatches (stage_relaxations.h): past that it
// never finished in its share of the time, which went to nothing.
TEST(StageRelaxations, TheRootTriesThemOnlyUpToSixteenMicrobatches) {
  for (const int m : {16, 24}) {
    gen::GenerateRequest req;
    req.model = "gpt3-14.6b";
    req.devices = 4;
    req.microbatches = m;
    req.memory_limit = "2act";
    const Instance inst = gen::generate(gen::resolve(req)).instance;
    SolveOptions o;
    o.threads = 1;
    o.time_limit = 2;  // 0.1 s for the relaxation
    const RootBound r = root_lower_bound(inst, kInf, o);
    EXPECT_EQ(r.relaxation_ran, m <= 16) << m << " microbatches";
    EXPECT_GT(r.bound, 0) << m << " microbatches";
  }
}

}  // namespace
}  // namespace optpipe
