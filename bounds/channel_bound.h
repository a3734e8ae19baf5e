// Channel bound: the D2H and the H2D channel of each PCIe group as one machine each (Jackson
// 1955; Carlier, "The one-machine sequencing problem", EJOR 11(1), 1982, §2; heads and tails as
// in Carlier & Pinson, Management Science 35(2), 1989).
//
// At a node, every listed forward F(s, j) with level r > 0 whose offload has not started is a
// job of its group's D2H channel: release = F(s, j)'s finish (known end, or head + duration) and
// no earlier than the channel's free time, processing r·offload[s], tail r·reload[s] +
// duration of B(s, j) + B(s, j)'s tail (its reload follows the offload, B(s, j) the reload).
// Likewise every such microbatch whose reload has not started is a job of the H2D channel:
// release = the lower bound on its start (heads.h: after its offload, the stage's previous
// reload, and room for it) and no earlier than the channel's free time, processing r·reload[s],
// tail = duration + tail of B(s, j).
//
// Validity: in every completion of the node these transfers happen, one at a time per channel
// (spec §4: a channel serves one transfer at a time), each no earlier than its release, and the
// makespan is at least its end plus its tail (every compute op of the tail chain follows it).
// The channel's FIFO order and waits only delay them further, and the transfers not decided yet
// (forwards not listed, which may take level 0) are left out: a relaxation. Jackson's preemptive
// schedule minimises max(completion + tail) of the relaxation, so its value is a lower bound on
// the makespan. At the root no level is decided and the bound is 0.
//
// The code is the OPTPIPE_HD core channel_bound_core (channel_bound_core.h), shared with the
// batched bounds; channel_bound below wraps it.
//
// Complexity: O(n log n) per channel for its n pending transfers.
#pragma once

#include <vector>

#include "bounds/bound_problem.h"
#include "bounds/node_transfers.h"
#include "bounds/one_machine_bound.h"

namespace optpipe {

// The largest channel bound over the groups' D2H and H2D channels. `finish` and `reload_lb`
// come from compute_heads with the same `transfers`. `scratch` is grown as needed (S·m jobs).
double channel_bound(const BoundProblem& problem, const NodeTransfers& transfers, const std::vector<double>& finish,
                     const std::vector<double>& reload_lb, std::vector<OneMachineJob>& scratch);

}  // namespace optpipe
