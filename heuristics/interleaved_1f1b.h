// Interleaved 1F1B (Megatron-LM's virtual-pipeline schedule; Narayanan et al., "Efficient
// Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", SC'21, arXiv 2104.04473,
// §2.2.2 and Fig. 4). Loop placement: stage s on device s mod p, v = S/p >= 2 chunks per device.
//
// Each device walks the same table of v·m virtual microbatches. The table is cut into groups
// of g microbatches; inside a group, chunk c runs microbatches of the group in order before
// chunk c+1 does (forward virtual id k -> chunk (k mod g·v) div g, microbatch base + k mod g;
// the backward table is the same with the chunk reversed, v-1-c). Rank r runs
// min(2·(p-r-1) + (v-1)·g, v·m) warm-up forwards, then (next forward, oldest backward) pairs,
// then the remaining backwards. The backward is fused: W right after its B when split.
//
// Microbatch groups: when p divides m, g = p (Megatron's table, exactly). Otherwise, as
// PyTorch's ScheduleInterleaved1F1B does, there are max(1, m div p) rounds; we let their sizes
// differ by one (larger rounds first) where PyTorch demands m mod rounds == 0, so every round
// holds at least min(m, p) microbatches and the warm-up uses the first round's size. For
// m < p this is one round of m microbatches. (A round larger than the one the warm-up is sized for
// would put a B before its own F on the last rank, hence the larger rounds first; a round smaller
// than p, which Megatron forbids for its dependency bubbles, cannot occur for m >= p.) The price: each rank's
// warm-up, hence its peak, grows by (v-1)·(g0-p) stage activations (less where capped at v·m),
// g0 = ceil(m / (m div p)) being the first round's size, the smallest possible with all rounds
// >= p. Megatron's special case m == p (all forwards first) is not copied: the formula above is
// used for every m.
//
// Peak on rank 0: its warm-up + 1 = pv + p - 1 stage activations when p divides m (PipeOffload,
// arXiv 2503.01328, §3.1), about (v+1)/v of 1F1B's p·M_B (its Table 1: 1F1B-I); bubble
// (p-1)(T_F+T_B+T_W) with per-chunk times, 1/v of 1F1B's.
// O(v · p · m).
#pragma once

#include "heuristics/heuristic.h"

namespace optpipe {

class Interleaved1F1B final : public Heuristic {
 public:
  std::string name() const override { return "interleaved-1f1b"; }
  std::string title() const override { return "Interleaved 1F1B"; }
  std::string description() const override {
    return "Megatron's interleaved 1F1B over virtual microbatches (Narayanan et al. 2021, arXiv 2104.04473); "
           "loop placement";
  }
  Built build(const Instance& instance, const RunLimits& limits) const override;
  using Heuristic::build;
};

}  // namespace optpipe
