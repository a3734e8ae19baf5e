// The branch-and-bound's open nodes (solver.h), shared by its workers: a binary heap ordered
// best-first (smallest bound, those below a floor as ties: set_floor; ties: the deeper node),
// and per worker the bound of what it holds (a node it dives from, or a batch of lanes) so that
// the proven bound accounts for nodes out of the pool. Like HiGHS's node queue, it can drop
// every node that an incumbent makes useless.
//
// Thread safety: every member function may be called from any thread. `mu_` guards the heap
// and the busy count; each worker's working bound is an atomic written by that worker alone
// (without the lock, while it dives) and read under `mu_` by min_bound(). A worker marks itself
// busy when it takes nodes (pop, pop_many) and idle again with release(); the search is over
// when the heap is empty and no worker is busy (finished()).
//
// Complexity: push, pop O(log n); pop_many O(k log n); drop_at_or_above, set_floor O(n).
#pragma once

#include <atomic>
#include <cstddef>
#include <limits>
#include <mutex>
#include <vector>

#include "search/search_node.h"

namespace optpipe {

class NodePool {
 public:
  explicit NodePool(int workers);

  void push(NodePtr n);
  // The open node with the smallest bound, or nullptr. Marks worker `w` busy, its working bound
  // that node's bound.
  NodePtr pop(int w);
  // Up to `k` open nodes, smallest bounds first. Worker `w` becomes busy unless it already is
  // (`held`), and its working bound drops to the smallest bound it holds (`held_min`, the bound
  // of what it held before, or infinity).
  std::vector<NodePtr> pop_many(int w, std::size_t k, bool held, double held_min);
  // Worker `w` holds nothing any more.
  void release(int w);
  // Worker `w` holds nodes whose smallest bound is `b` now (it went deeper or took more).
  void set_working_bound(int w, double b) { working_bound_[static_cast<std::size_t>(w)].store(b); }
  void lower_working_bound(int w, double b);

  // Bounds below `proven` plus `tie` are ties from now on (the pool's order, NodeOrder, counts
  // them as that), the deeper node first. `proven` must be a lower bound for every open node
  // and every node pushed later (e.g. the whole tree's, proven at its root).
  //
  // Why: near the root the nodes' own bounds are weaker than the root's (the device relaxation
  // and the single-stage relaxation are asked from some depth on, node_expansion.cc), so a plain
  // best-first order expands the shallow nodes whose cheap bounds lie below the root's first,
  // breadth-first, before any node whose bound met the root's, though none of them can be
  // better than the root's bound. Where the root bound is the optimum, the schedules that reach
  // it lie below nodes whose bounds are the root's up to rounding: seed-11 small-v-04 of
  // bench/solvers/random_small.py (root bound 33.23 ms, its optimum) took 22.7k nodes to find its
  // optimum, and with them as ties, followed depth-first, 306 (bench/README.md). `tie` covers
  // the rounding: bounds computed along other sums differ in the last bits.
  // Complexity: O(n) (the heap is rebuilt).
  void set_floor(double proven, double tie);

  std::size_t size() const;
  // No open node is left and no worker holds one.
  bool finished() const;
  // min(cap, the smallest open bound, every worker's working bound). With a floor (set_floor)
  // it may report the floor's `proven` instead where open nodes' bounds lie below the floor.
  double min_bound(double cap) const;

  // Removes every open node whose bound is at least `cutoff` (an incumbent made them useless);
  // returns how many, and the smallest bound among them (infinity when none).
  struct Dropped {
    std::size_t count = 0;
    double smallest = std::numeric_limits<double>::infinity();
  };
  // `dropped` (null: none): where the removed nodes go instead of being freed.
  Dropped drop_at_or_above(double cutoff, std::vector<NodePtr>* dropped = nullptr);

 private:
  void push_locked(NodePtr n);
  NodePtr pop_locked();

  mutable std::mutex mu_;
  std::vector<NodePtr> heap_;  // guarded by mu_; a heap under order_ (std::push_heap)
  NodeOrder order_;            // guarded by mu_
  double proven_ = -std::numeric_limits<double>::infinity();  // guarded by mu_: set_floor's
  int busy_ = 0;               // guarded by mu_: workers holding nodes
  std::vector<std::atomic<double>> working_bound_;  // [worker]; infinity when it holds nothing
};

}  // namespace optpipe
