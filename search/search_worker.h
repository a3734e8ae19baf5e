// One branch-and-bound worker's own state (solver.h): its simulator, the scratch of the node
// bound and of branching, its batch when the bounds run batched, and its statistics. Nothing in
// it is shared: each worker thread owns one, and the search merges its statistics when the
// worker returns (search_stats.h).
#pragma once

#include <memory>
#include <vector>

#include "bounds/node_bound.h"
#include "kernels/batched_bounds.h"
#include "model/instance.h"
#include "model/simulator.h"
#include "search/candidates.h"
#include "search/energy_sampling.h"
#include "search/search_stats.h"
#include "search/transposition.h"

namespace optpipe {

struct SearchWorker {
  explicit SearchWorker(const Instance& instance) : sim(instance) {}

  Simulator sim;
  Simulator::Snapshot parent;  // the state of the node being expanded
  NodeBoundWork bound;      // the node bound's times, transfers, heads and scratch
  EnergySampling energy;    // whether the node bound computes its memory energy part
  std::vector<Candidate> candidates;
  StateKey key;
  bool relaxation_unfinished = false;  // the last bound_child's device relaxation stopped undecided
  // [d]: the orders of the last relaxed schedules below the cutoff that device d's relaxations
  // at this worker's nodes met (the ops each placed after its node's; at most kDeviceWitnesses,
  // node_expansion.cc): a node's question tries them first (device_relaxation_at_node).
  std::vector<std::vector<std::vector<Action>>> device_witnesses;
  // Batch modes: the evaluator and the children waiting for their batched bounds.
  std::unique_ptr<BatchedBounds> batch;
  NodeTimesBatch nodes;  // the children's times and transfers
  std::vector<double> batch_bounds;
  std::vector<int> kept;
  SolveStats stats;
  CandidateStats candidate_stats;

  // The statistics with the branching's folded in, for merging.
  SolveStats final_stats() const {
    SolveStats s = stats;
    s.pruned_dominance += candidate_stats.dominated;
    return s;
  }
};

}  // namespace optpipe
