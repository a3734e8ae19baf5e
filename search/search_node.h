// An open node of the branch-and-bound (solver.h) and the packing of its decisions.
//
// A node is stored as the decisions that lead to it (each action packed in 32 bits, in the
// order they were taken) and its lower bound. Replaying the decisions on an open-list
// simulation, which is deterministic, restores its state; a path costs 4 bytes a decision where
// a simulator snapshot costs kilobytes, so the pool (node_pool.h) can hold millions of nodes.
#pragma once

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <limits>
#include <memory>
#include <new>
#include <stdexcept>
#include <vector>

#include <tbb/scalable_allocator.h>

#include "model/action.h"
#include "model/instance.h"

namespace optpipe {

// Nodes and their paths come from TBB's scalable allocator (tbbmalloc): a search that stops at
// its time limit can hold millions of open nodes, and freeing them through the default
// allocator took 0.55 s after the limit on small-loop-03 of bench/solvers/random_small.py at
// --time-limit 20 (1.6M open nodes); 0.21 s through this one (and the search runs about 1%
// faster). Sanitizer builds keep the system allocator, which the sanitizers see into (TSan
// takes tbbmalloc's reuse of a block across threads for a race; ASan cannot check its blocks).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define OPTPIPE_NODES_FROM_SYSTEM_ALLOCATOR 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define OPTPIPE_NODES_FROM_SYSTEM_ALLOCATOR 1
#endif
#endif

struct SearchNode {
#ifdef OPTPIPE_NODES_FROM_SYSTEM_ALLOCATOR
  std::vector<std::uint32_t> path;
#else
  std::vector<std::uint32_t, tbb::scalable_allocator<std::uint32_t>> path;
#endif
  double bound = 0;
  int depth = 0;
  double priority = 0;  // dive order at equal bounds: smaller first (dive_worker.h)
  // Its device relaxation stopped at its node limit undecided: its children skip theirs
  // (NodeExpander::bound_child).
  bool relaxation_unfinished = false;

#ifndef OPTPIPE_NODES_FROM_SYSTEM_ALLOCATOR
  static void* operator new(std::size_t bytes) {
    if (void* p = scalable_malloc(bytes)) return p;
    throw std::bad_alloc();
  }
  static void operator delete(void* p) noexcept { scalable_free(p); }
#endif
};
using NodePtr = std::unique_ptr<SearchNode>;

// The pool's order: its top is the smallest bound, a bound below `floor` counting as `floor`;
// ties: the deeper node, then the smaller bound. With no floor (-infinity) that is the smallest
// bound, then the deeper node. Why a floor: NodePool::set_floor.
struct NodeOrder {
  double floor = -std::numeric_limits<double>::infinity();
  bool operator()(const NodePtr& a, const NodePtr& b) const {
    const double ka = std::max(a->bound, floor), kb = std::max(b->bound, floor);
    if (ka != kb) return ka > kb;
    if (a->depth != b->depth) return a->depth < b->depth;
    return a->bound > b->bound;
  }
};

// An action in 32 bits: type (2) | offload level index (6) | stage (10) | microbatch (14). The
// solver refuses instances beyond these widths (solver.cc).
class ActionCodec {
 public:
  static constexpr int kMaxStages = 1024, kMaxMicrobatches = 16384, kMaxLevels = 64;

  explicit ActionCodec(const Instance& instance) : levels_(instance.offload_levels) {}

  std::uint32_t encode(const Action& a) const {
    std::uint32_t level = 0;
    for (std::size_t i = 0; i < levels_.size(); ++i) {
      if (levels_[i] == a.r) level = static_cast<std::uint32_t>(i);
    }
    assert(a.stage >= 0 && a.stage < kMaxStages && a.mb >= 0 && a.mb < kMaxMicrobatches);
    return (static_cast<std::uint32_t>(a.type) << 30) | (level << 24) | (static_cast<std::uint32_t>(a.stage) << 14) |
           static_cast<std::uint32_t>(a.mb);
  }

  Action decode(std::uint32_t x) const {
    Action a;
    a.type = static_cast<OpType>(x >> 30);
    a.r = levels_[(x >> 24) & 63u];
    a.stage = static_cast<int>((x >> 14) & 1023u);
    a.mb = static_cast<int>(x & 16383u);
    return a;
  }

 private:
  std::vector<double> levels_;
};

}  // namespace optpipe
