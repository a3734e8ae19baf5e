// Branching at a decision point of the time-ordered search: the actions a device may append
// next, and the dominance rules that cut some of them.
//
// At a decision, device d is idle at time t with its list used up. Its next action is one of:
//   - F(s, j) for the next microbatch j of each of its stages s, with each allowed offload level;
//   - B(s, j) for the next j of each stage, once F(s, j) (and R(s, j) if offloaded) is listed;
//   - W(s, j) for the next j of each stage, once B(s, j) is listed (split backward only);
//   - R(s, j) for the next offloaded microbatch of each stage whose F is listed.
// That is every list the spec allows, minus:
//
// Rule 1 (own-list deadlock, always): an action whose input is an op of the same device that is
// not yet listed can never start: the input comes later in the same list, and the device runs
// its list in order, so the input waits for the action and the action for the input. This cuts
// F(s, j) before F(s-1, j), B(s, j) before B(s+1, j) on the same device, B before its F or R,
// and W before its B. No feasible schedule is lost.
//
// Rule 2 (active B/W, only when the instance cannot offload): if a B or W of d can start now
// (inputs done) and would end by the earliest time another candidate X could start (X's
// inputs are not done; its head is a lower bound on its start), then every schedule that runs
// X next is dominated by the same schedule with that B or W moved right before X. Proof:
// without offload, device memory changes only at d's own compute actions, so the memory an F
// sees at its start is static + the sum over the ops before it in its list (all finished): a
// function of the list prefix, not of timing. Moving a B or W earlier only removes memory from
// the prefixes it joins, so every F that fits still fits. The moved op runs in an idle gap that
// ends no later than X's start, so by induction over the list order every op starts no later:
// the makespan does not grow and no deadlock appears. (With offload, an R after the moved op
// would be requested earlier and could take memory an F needs; the rule is then off.)
#pragma once

#include <vector>

#include "model/action.h"
#include "bounds/bound_problem.h"
#include "model/instance.h"
#include "model/simulator.h"

namespace optpipe {

struct Candidate {
  Action action;
  double earliest_start = 0;  // lower bound on when it can start (for ordering and rule 2)
};

struct CandidateStats {
  long long dominated = 0;  // cut by rule 2
};

// The candidates of device d at the decision of `state` (rule 1 applied), then rule 2 when
// `active_rule` is on. `head` holds the node's heads (bounds/heads.h) for ops not started.
void branch_candidates(const Instance& instance, const BoundProblem& problem, const Simulator::Snapshot& state,
                       int device, double time, const std::vector<double>& head, bool active_rule,
                       std::vector<Candidate>& out, CandidateStats& stats);

}  // namespace optpipe
