// Expanding one node of the branch-and-bound (solver.h): replay its decisions, branch over the
// deciding device's candidates (candidates.h), simulate each child to its next decision, and keep
// the children that are neither leaves, dead ends, dominated (transposition.h) nor bounded out.
//
// A child is bounded by the node bound (bounds/node_bound.h); in the batch modes only its times
// are taken here and the batch computes the bound (batch_worker.h). Where the single-stage
// relaxations apply (stage_relaxations.h) a child that survives the node bound is also bounded
// by the relaxation of its stages' histories and, from an eighth of the decisions on, by the
// relaxation with its own heads. Where the root's device relaxation (bounds/device_relaxation.h)
// applies, a child that survives the node bound from 3/8 of the decisions on (from 1/16 on near a
// proof: the cutoff within 2% of the proven bound) is also bounded by the relaxation of the
// device that gave the root its bound, then, until one cuts, of each other device it applies to
// (those that seldom cut only now and then), each with the child's own times and heads, answered
// where it can by a memo of earlier answers for the same history on that device
// (relaxation_memo.h) or by one of the worker's earlier relaxed schedules of that device,
// re-timed (SearchWorker::device_witnesses). Leaves offer themselves as incumbents.
//
// In a neighbourhood search (SolveOptions::neighbourhood, lns.h) the fixed microbatches keep the
// guide's order: only the next fixed action of the device's guide list is a candidate among
// them.
//
// Complexity per node: one incremental simulation step per candidate, and the node bound per
// child (O(S·m²) for the memory rules and the energy bound; the others O(S·m log m)).
#pragma once

#include <vector>

#include "model/action.h"
#include "model/simulator.h"
#include "search/search_context.h"
#include "search/search_node.h"
#include "search/search_worker.h"

namespace optpipe {

class NodeExpander {
 public:
  explicit NodeExpander(const SearchContext& ctx);

  // Puts w.sim at node n's decision by replaying its path; returns that decision.
  Simulator::Step replay(SearchWorker& w, const SearchNode& n) const;

  // Branches at node n, whose state is in w.sim at decision `step`: appends `children` (with
  // their bounds) and, in `actions`, the action each one appends. Leaves update the incumbent;
  // dead or bounded-out children are dropped. Leaves w.parent = n's state.
  void expand(SearchWorker& w, const SearchNode& n, const Simulator::Step& step, std::vector<NodePtr>& children,
              std::vector<Action>& actions) const;

  // The scalar node bound of the state `st` at decision time `t` (bounds/node_bound.h), counting
  // which part was best; leaves the node's times, transfers and heads in w.bound.
  double bound(SearchWorker& w, const Simulator::Snapshot& st, double t) const;

 private:
  // A leaf: offers its schedule as the incumbent.
  void reach_leaf(SearchWorker& w) const;
  // The node of n's child by action `a`, with its bound.
  NodePtr child_node(const SearchNode& n, const Action& a, double bound) const;
  // The child in w.sim after appending `action` at decision time `t`: its bound (scalar, with the
  // relaxations), or in batch modes its makespan so far with its times queued in the batch; the
  // cutoff or more when it is cut. `device`: the device that decided. Sets w.relaxation_unfinished.
  double bound_child(SearchWorker& w, const SearchNode& parent, double t, int device) const;
  // The device relaxations of the child in w.bound (its times and heads), with the incumbent as
  // the cutoff: the device that gave the root its largest one (SearchContext::relaxed_device),
  // then, until one cuts, the others it applies to (those whose answers seldom cut only now and
  // then); the largest, 0 when there is none or each search stops at `limit` nodes.
  double device_relaxation(SearchWorker& w, std::int64_t limit) const;
  // Device d's (the memo, the worker's witnesses, then the search).
  double device_relaxation_of(SearchWorker& w, int d, std::int64_t limit) const;
  // Batch modes: adds the child whose state is `st` to the worker's batch by its times and
  // transfers; returns what the CPU has for free: the makespan so far (a valid bound on its own).
  double bound_outside_batch(SearchWorker& w, const Simulator::Snapshot& st, double t) const;
  void keep_neighbourhood(const Simulator::Snapshot& st, int d, std::vector<Candidate>& cands) const;

  const SearchContext& ctx_;
  std::vector<std::vector<Action>> fixed_;  // neighbourhood search: the guide's fixed actions per device
};

}  // namespace optpipe
