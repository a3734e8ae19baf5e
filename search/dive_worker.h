// The branch-and-bound's default worker (solver.h, BoundsMode::kCpu): takes the open node with
// the smallest bound from the pool and dives depth-first from it, bounding each child on the CPU
// (node_expansion.h), following the most promising child and sending its siblings to the pool.
//
// Each node's bound is valid for its own subtree; bounds need not grow along a path, so the
// bound the worker reports for what it holds is the running minimum over its dive (it may
// understate, never overstate). Keeping children's raw bounds (rather than raising them to
// their parent's) orders the pool better: v-4x8 is proven in about a second this way, not at
// all in 10 s with raised bounds, which tie.
//
// When the pool is full (SearchContext::max_open) the worker finishes the children depth-first
// itself without the pool, which keeps the search exact but less best-first.
#pragma once

#include <vector>

#include "search/node_expansion.h"
#include "search/search_context.h"
#include "search/search_worker.h"

namespace optpipe {

class DiveWorker {
 public:
  DiveWorker(const SearchContext& ctx, const NodeExpander& expander, int index);
  // Works until the search is over or stopped; returns the worker's statistics.
  SolveStats run();

 private:
  // Depth-first from n: expand, keep the most promising child, send its siblings to the pool.
  void dive(NodePtr n);
  // Explores the subtrees of `stack` (its top first) depth-first without the pool; when stopped,
  // what is left goes back to the pool so that the bound stays proven.
  void local_dfs(std::vector<NodePtr>& stack);

  const SearchContext& ctx_;
  const NodeExpander& expander_;
  const int index_;
  SearchWorker w_;
};

}  // namespace optpipe
