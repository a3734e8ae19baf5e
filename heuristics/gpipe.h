// GPipe (Huang et al., "GPipe", arXiv 1811.06965, §2.3): all forwards, then all backwards.
//
// Generalised to any placement: each device runs its forwards ordered by (microbatch, stage),
// then its backwards ordered by (microbatch, reverse stage), W right after its B. Both orders
// are subsequences of one global topological order, so the lists never deadlock on their own;
// the peak is every microbatch's activation at once (m · M_B per stage). O(S · m).
#pragma once

#include "heuristics/heuristic.h"

namespace optpipe {

class GPipe final : public Heuristic {
 public:
  std::string name() const override { return "gpipe"; }
  std::string title() const override { return "GPipe"; }
  std::string description() const override {
    return "all forwards then all backwards (Huang et al. 2019, arXiv 1811.06965); any placement";
  }
  Built build(const Instance& instance, const RunLimits& limits) const override;
  using Heuristic::build;
};

}  // namespace optpipe
