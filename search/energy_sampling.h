// Whether a worker computes the node bound's memory energy part (bounds/memory_energy_bound.h)
// at its next node, or leaves it out (bounds/node_bound.h, `energy` false).
//
// Why. The memory energy part is the most expensive of the node bound's four and, on some
// instances, never the largest: on the 96 V, loop, chain and unsplit instances of
// bench/solvers/random_small.py (seeds 11, 13, 17) and the shipped ones without offload it was
// the best part at no node at all, while it took 10-17% of the tree's time on small-v-02 and
// small-loop-00 (`perf`). With offload it matters (offload-random-02: the best part at 3% of
// the nodes; offload-random-11: at 142 of 182).
//
// Rule. Every node computes it until kQuiet computed parts in a row have not raised the bound
// (memory energy strictly above the other three parts, as NodeBoundParts::best counts it); from
// then on only every kEvery-th node does, and one that raises it brings back every node. So an
// instance where the part never helps pays about 1/kEvery of it, and one where it starts to help
// (deeper in the tree, say) gets it back within kEvery nodes of the first sampled one that
// shows it.
//
// What it changes. Leaving a part out keeps the value a valid lower bound (the maximum of fewer
// valid bounds), so the search stays exact; a node whose left-out part would have raised it gets
// a smaller bound: it may be cut later or expanded in another order. With one thread the choice
// is a function of the worker's sequence of nodes, so the search stays deterministic.
//
// Complexity: O(1) per node.
#pragma once

#include <cstdint>

namespace optpipe {

class EnergySampling {
 public:
  static constexpr std::int64_t kQuiet = 2048;  // computed parts without a raise before sampling
  static constexpr std::int64_t kEvery = 16;    // then one node in this many computes it

  // Whether the next node computes the part.
  bool want() {
    if (!sampling_) return true;
    return ++since_sample_ % kEvery == 0;
  }

  // After a node: whether the part ran, and whether it raised the bound.
  void record(bool ran, bool raised) {
    if (!ran) return;
    if (raised) {
      sampling_ = false;
      quiet_ = 0;
      return;
    }
    if (++quiet_ >= kQuiet) sampling_ = true;
  }

  bool sampling() const { return sampling_; }

 private:
  bool sampling_ = false;
  std::int64_t quiet_ = 0;         // computed parts in a row that did not raise the bound
  std::int64_t since_sample_ = 0;  // nodes since sampling began
};

}  // namespace optpipe
