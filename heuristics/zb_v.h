// ZB-V (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, arXiv 2401.10241, §6, Fig. 8),
// in the exact order of PyTorch's ScheduleZBVZeroBubble (torch/distributed/pipelining/
// schedules.py, _calculate_single_rank_operations; its "I" is our B). V placement (device r
// holds stage r, chunk 0, and stage 2p-1-r, chunk 1), split backward.
//
// Rank r of p, generated for n = max(2p-1, m) microbatches:
//   1. 2(p-r)-1 forwards of chunk 0;
//   2. r × (F chunk 1, F chunk 0);
//   3. p-r × (F chunk 1, B chunk 1, W chunk 1);
//   4. while forwards remain: [F chunk 0 if any left], B chunk 0, W chunk 0, F chunk 1, B chunk 1,
//      W chunk 1;
//   5. r × (B chunk 0, B chunk 1); p-r × (B chunk 0, W chunk 0); the remaining W chunk 1, then
//      the remaining W chunk 0.
// Then every action of a microbatch >= m is dropped. The lists for n microbatches are acyclic,
// and dropping whole microbatches keeps them so (every dependency stays within a microbatch).
// Zero bubble at T_F = T_B = T_W and peak p·M_B (M_B = both chunks' activations), balanced
// over the devices. O(p · m).
#pragma once

#include "heuristics/heuristic.h"

namespace optpipe {

class ZbV final : public Heuristic {
 public:
  std::string name() const override { return "zb-v"; }
  std::string title() const override { return "ZB-V"; }
  std::string description() const override {
    return "zero-bubble V schedule in PyTorch's ScheduleZBVZeroBubble order (Zero Bubble, arXiv 2401.10241, "
           "§6); V placement, split backward";
  }
  Built build(const Instance& instance, const RunLimits& limits) const override;
  using Heuristic::build;
};

}  // namespace optpipe
