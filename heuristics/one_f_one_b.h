// 1F1B (PipeDream-flush / DAPPLE / Megatron's non-interleaved schedule; Narayanan et al.,
// arXiv 2104.04473, and Zero Bubble, arXiv 2401.10241, §2 and Table 2).
//
// Stage s of p: min(p-s-1, m) warm-up forwards, then pairs (next F, oldest backward), then the
// remaining backwards; the backward is fused (W right after B). Peak (p-s)·M_B on stage s. With
// equal stage times and no comm the makespan is m(F+B+W) + (p-1)(F+B). O(p · m).
#pragma once

#include "heuristics/heuristic.h"

namespace optpipe {

class OneFOneB final : public Heuristic {
 public:
  std::string name() const override { return "1f1b"; }
  std::string title() const override { return "1F1B"; }
  std::string description() const override {
    return "warm-up forwards, then one forward / one backward (PipeDream-flush, arXiv 2104.04473); one stage per device";
  }
  Built build(const Instance& instance, const RunLimits& limits) const override;
  using Heuristic::build;
};

}  // namespace optpipe
