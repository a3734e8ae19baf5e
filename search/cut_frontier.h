// The nodes a search with a target cut by their bound, kept so that the next search, with a
// higher target, starts from them instead of from the root (bound_probing.h).
//
// Why it is exact: a search that ends without a schedule at most its target T has expanded every
// node whose bound was below T and dropped the rest for one of three reasons: the bound (at least
// T: kept here, with that bound), a deadlock, or the dominance rules and the transposition table
// (a node covered by another that was generated before it). Every complete schedule is a leaf
// below the root, so its path passes through one of: an expanded node's children, a deadlock (no
// schedule), a covered node (whose schedules are no better than the covering node's, which is
// itself expanded, kept here or covered in turn), or a node kept here. The kept nodes therefore
// cover every schedule the search did not rule out, and a search for a higher target T' that
// starts from them (those with bound >= T' are cut again at once) is the search from the root
// without the part below T that the first one already settled. The bounds stored are valid for
// their subtrees whatever the cutoff (a bound lifted to the old cutoff is at most the subtree's
// best makespan, within the relaxations' tolerance).
//
// Memory: a node costs its path (4 bytes a decision) and its overhead; past `budget_bytes` the
// frontier stops keeping nodes and is incomplete, and the next search must start from the root.
//
// Thread safety: keep() may be called from any thread; the rest from one thread once the search
// is over.
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

#include "search/search_node.h"

namespace optpipe {

class CutFrontier {
 public:
  explicit CutFrontier(std::size_t budget_bytes) : budget_(budget_bytes) {}

  // Keeps a node cut by its bound (or drops it, and marks the frontier incomplete, past the budget).
  void keep(NodePtr n);
  // Every cut node is here (the budget was never passed).
  bool complete() const;
  // Moves the nodes out (the frontier is then empty, and complete again).
  std::vector<NodePtr> take();

 private:
  mutable std::mutex mu_;
  std::vector<NodePtr> nodes_;
  std::size_t bytes_ = 0;
  std::size_t budget_;
  bool complete_ = true;
};

}  // namespace optpipe
