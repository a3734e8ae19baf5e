// Waves: a schedule for every instance that has one within the memory floor -- the fallback
// that makes `schedule --heuristic best` answer whenever a schedule exists.
//
// GPipe (gpipe.h) run in waves of k microbatches: each device runs the forwards of a wave
// ordered by (microbatch, stage), then its backwards by (microbatch, reverse stage), W right
// after its B, then the next wave. Like GPipe's, every device's order is a subsequence of one
// global topological order (waves in sequence), so the lists never deadlock on their own, on
// any placement (one stage per device, V, loop, or any other). A wave holds at most k
// microbatches' activations; the heuristic simulates each k (all of 1..8, then powers of two up
// to m, and m) and keeps the fastest schedule that fits.
//
// k = 1 is the memory floor without offload: in every schedule, when the first microbatch to
// reach the last stage's B starts it, every device still holds that microbatch's activation of
// each of its stages (no B of it has run below the last stage), which is exactly one wave's
// peak at k = 1 (and W right after B frees no less). So when even k = 1 does not fit, no
// schedule without offload exists. With offload the same waves are also tried with every
// offloadable forward at the highest allowed level and each reload right before its B: at
// k = 1 a device then holds, besides the activation being used, only the parts that cannot be
// offloaded.
//
// Complexity: O(K · N log N) for N actions and K ≤ 2 (8 + log2 m + 1) simulations.
#pragma once

#include "heuristics/heuristic.h"

namespace optpipe {

class Waves final : public Heuristic {
 public:
  std::string name() const override { return "waves"; }
  std::string title() const override { return "Waves"; }
  std::string description() const override {
    return "GPipe in waves of k microbatches, the fastest k that fits, with full offload if needed; the memory "
           "floor at k = 1; any placement";
  }
  Built build(const Instance& instance, const RunLimits& limits) const override;
  using Heuristic::build;
  bool memory_aware() const override { return true; }
  bool searches() const override { return true; }
};

// The lists of waves of `k` microbatches (k >= 1); `offload`: every offloadable forward at the
// instance's highest offload level, with its reload right before its B.
Schedule wave_schedule(const Instance& instance, int k, bool offload);

}  // namespace optpipe
