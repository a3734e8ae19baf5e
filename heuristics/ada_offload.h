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

// Under a deadline, a repair that cannot finish in time gives up early and leaves its core to
// the heuristics and searches that can: at 32 GPUs x 128 microbatches one base's repair takes
// 45-60 s (thousands of offloads, several simulations each), and `optpipe solve --time-limit
// 60` gave it its 15 s share for no schedule on each of bench-gpt3-28.3b-32x128-{2,4}act and
// bench-llama2-7b-32x128-2act, while Periodic, on the same two cores, took 10-14 s instead of
// 3.5. Its progress is where the first overflow of the run without limits lies in that run
// (`fraction`, 0 to 1); after `elapsed` seconds (at least kAdaGiveUpAfter, where the
// projection has settled), the rest at the same pace would take elapsed x (1 - fraction) /
// fraction. True when that passes `left`, the seconds to the deadline. The projection is
// optimistic where the fill needs fewer offloads than the steady state (the usual case), so a
// repair that would finish is not stopped.
constexpr double kAdaGiveUpAfter = 1.0;
bool ada_repair_would_miss(double elapsed, double fraction, double left);

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
  bool searches() const override { return true; }
};

}  // namespace optpipe
