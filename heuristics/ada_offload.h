// AdaOffload: offload only as much as the memory limit requires.
//
// The OptPipe paper (Li et al., arXiv 2510.05186) names an adaptive offload heuristic,
// "AdaOffload", as the feasible initial schedule of its MILP; its algorithm is not public. This
// is our reconstruction (../shared/background/optpipe-paper.md §3.1), in the PipeOffload
// lineage (arXiv 2503.01328, §2: prefer the longest lifespans):
//   1. Start from every memory-oblivious schedule (base_schedules.h; up to 16 distinct bases),
//      skipping those whose memory that offload cannot remove (weight activations waiting for
//      W, activations in use) is already over the limit in their own timing.
//   2. Simulate without memory limits and find the first moment t a device d exceeds its limit.
//   3. Among d's activations resident at t (F started, B not ended) whose stage can offload,
//      pick one whose round trip fits around t (offload ends by t, reload can start after t),
//      longest F→B lifespan first (if none fits around t, the longest-lived resident one), and
//      raise its offload level to the smallest level that covers the excess (else the largest).
//   4. Choose where its reload goes by simulation: try the latest position that stays hidden
//      (request + reload time before B's start), one earlier, and right after the F; keep the
//      one with the least memory overflow, then the smallest makespan.
//   5. Repeat 2-4 until every device fits, then check with the limits enforced.
//   6. Drop offloads that turn out unnecessary (shortest lifespans first) while the schedule
//      stays feasible and no slower.
// The bases are repaired in parallel (TBB); the best result wins, ties to the earlier base, so
// the result does not depend on the thread count.
//
// Complexity: each repair step is ≤ 4 simulations of O(E·(D+G)); the number of steps is at
// most the number of offloadable forwards times the number of levels.
#pragma once

#include "heuristics/heuristic.h"

namespace optpipe {

// Steps 2-6 on one given base schedule (its offloads, if any, are kept as a start).
Built ada_offload_from(const Instance& instance, const Schedule& base, const std::string& origin = "the base");

class AdaOffload final : public Heuristic {
 public:
  std::string name() const override { return "ada-offload"; }
  std::string title() const override { return "AdaOffload"; }
  std::string description() const override {
    return "best memory-oblivious schedule plus only the offloads needed to fit, placed by simulation (OptPipe's AdaOffload, reconstructed)";
  }
  Built build(const Instance& instance, const RunLimits& limits) const override;
  using Heuristic::build;
  bool memory_aware() const override { return true; }
};

}  // namespace optpipe
