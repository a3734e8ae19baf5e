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

#include <cstdint>
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

  // The simulator at node n's decision: restored from the deepest state this worker kept along
  // its dives whose path n's path begins with, then n's remaining decisions replayed (all of them,
  // from the root, where none is kept). The pool is best-first with ties to the deeper node, so a
  // popped node is mostly a sibling of a node on a recent dive: replaying whole paths (about 70
  // decisions on random_small.py's V and loop instances) was 8-17% of a solve (`perf`).
  Simulator::Step restore_or_replay(const SearchNode& n);
  // Keeps the state of the node just expanded (w_.parent, swapped out: the next expansion
  // overwrites it anyway) as the state after its path, at every stride_-th depth (at most about
  // 64 along a path: memory stays small at 2048 ops too).
  void keep_state(const SearchNode& n, const Simulator::Step& step);

  const SearchContext& ctx_;
  const NodeExpander& expander_;
  const int index_;
  SearchWorker w_;
  struct KeptState {
    Simulator::Snapshot state;
    Simulator::Step step{};
  };
  std::vector<KeptState> kept_;        // [depth]: the state after path_[0..depth), where kept_valid_
  std::vector<char> kept_valid_;       // [depth]
  decltype(SearchNode::path) path_;    // the path of the deepest node kept
  std::size_t stride_ = 1;             // a state kept every stride_ decisions
};

}  // namespace optpipe
