// The branch-and-bound's worker in the batch modes (solver.h, BoundsMode::kTbb / kGpu): best-
// first in batches, with dives. The worker holds a set of lanes, each a depth-first dive. Every
// round expands every lane (the CPU simulates the children, node_expansion.h), bounds all their
// children in one batch (heads and the four bounds, kernels/batched_bounds.h), keeps those below
// the cutoff, continues each lane with its best kept child (smallest bound, then the dive's
// list-scheduling priority) and sends the other kept children to the pool. Lanes that end (a
// leaf, or every child cut) are refilled from the worker's own stack, then best-first from the
// pool.
//
// The lane count adapts to the tree: the pool's share per worker, at least 1 and at most the
// batch size (narrow tree: small batches; wide: up to 1024 lanes), and it starts at 1 and
// doubles each round in which a dive ended: the first dive reaches a leaf after about one pass
// over the ops (an incumbent when there was none), not after lanes x depth nodes of lockstep
// dives. When the pool is full (SearchContext::max_open), siblings stay on the worker's stack
// instead, as in dive_worker.h.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "kernels/batched_bounds.h"
#include "search/node_expansion.h"
#include "search/search_context.h"
#include "search/search_worker.h"

namespace optpipe {

// The evaluator of a batch backend (kTbb or kGpu) for `problem`, sized for `batch_size` lanes
// (0: the default 1024). Throws std::runtime_error, naming the reason, when the backend is not
// there (no CUDA build, no GPU).
std::unique_ptr<BatchedBounds> make_batch_bounds(BoundsMode backend, const BoundProblem& problem, int batch_size);

class BatchWorker {
 public:
  BatchWorker(const SearchContext& ctx, const NodeExpander& expander, int index);
  // Works until the search is over or stopped; returns the worker's statistics.
  SolveStats run();

 private:
  // Tops the lanes up to `want` from the stack, then from the pool; false when none is left.
  bool refill(std::size_t want);
  // Expands every lane whose bound is below the cutoff; their children go to pending_ (lane k's
  // are pending_[first_child_[k] .. first_child_[k + 1])).
  void expand_lanes();
  // Bounds the pending children in one batch; w_.kept lists the ones below the cutoff.
  void evaluate_pending();
  // Each lane goes on with its best kept child; the other kept children go to the pool (or,
  // when it is full, to the worker's stack). Returns whether a dive ended.
  bool advance_lanes();
  // The smallest bound the worker holds (lanes and stack), or `b`.
  double held_bound(double b) const;

  const SearchContext& ctx_;
  const NodeExpander& expander_;
  const int index_;
  SearchWorker w_;
  std::vector<NodePtr> lanes_, next_lanes_, children_, pending_, stack_;
  std::vector<Action> actions_;
  std::vector<std::size_t> first_child_;
  bool held_ = false;  // the worker holds nodes from the pool (it is busy there)
};

}  // namespace optpipe
