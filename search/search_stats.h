// The branch-and-bound's statistics: one table of counters (OPTPIPE_SEARCH_COUNTERS) from which
// the struct's members, the merge of a worker's counts into the total and the walk over every
// counter (for JSON and `-v` reports) are all generated, so that a new counter is one line here.
// Each worker counts into its own SolveStats (no sharing, no atomics); the search merges them
// when the worker returns. The values that are not sums (thread count, the backend, times and
// the root relaxation's bound) are plain members set once by the search.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "search/bounds_mode.h"

namespace optpipe {

// X(name, what it counts). Summed over the workers.
#define OPTPIPE_SEARCH_COUNTERS(X)                                                                        \
  X(nodes, "nodes expanded (a decision point branched on)")                                              \
  X(leaves, "complete schedules reached")                                                                \
  X(pruned_bound, "children cut by the bound (the relaxations' cuts included)")                          \
  X(pruned_deadlock, "children whose lists deadlock")                                                    \
  X(pruned_dominance, "children cut by a dominance rule (search/candidates.h, rule 2)")                  \
  X(pruned_transposition, "children whose state another node dominates (search/transposition.h)")        \
  X(bound_calls, "node bounds computed")                                                                 \
  X(critical_path_best, "bound calls where the critical path was the maximum")                           \
  X(one_machine_best, "... where a device's one-machine bound was")                                      \
  X(channel_best, "... where a PCIe channel's one-machine bound was")                                    \
  X(memory_best, "... where a stage's memory energy bound was")                                          \
  X(memory_energy_skipped, "... without the memory energy part (search/energy_sampling.h)")             \
  X(incumbent_updates, "leaves that improved the incumbent")                                             \
  X(batches, "batch modes: batches evaluated")                                                           \
  X(batched_nodes, "batch modes: children bounded in them")                                              \
  X(single_stage_nodes, "search nodes of the single-stage relaxations (root and nodes; not in nodes)")   \
  X(last_tail_searches, "root: single-stage relaxations searched again with the last tails")             \
  X(last_tail_raised, "... where that raised the stage's value")                                         \
  X(relaxation_calls, "history relaxations searched at the nodes")                                       \
  X(relaxation_unfinished, "relaxation searches that hit their node limit (worth 0)")                    \
  X(relaxation_over_budget, "relaxation searches skipped at the nodes: over their budget")             \
  X(relaxation_search_nodes, "search nodes of the relaxations at the nodes (also in single_stage_nodes)") \
  X(relaxation_hits, "history relaxations answered from the memo")                                       \
  X(pruned_relaxation, "children cut by a relaxation (also in pruned_bound)")                            \
  X(node_relaxation_calls, "relaxations with the node's own heads searched")                             \
  X(node_relaxation_hits, "... answered from their memo")                                                \
  X(spec_rule_calls, "history relaxations of the first stage under the spec's start rules")            \
  X(device_node_calls, "device relaxations searched at the nodes")                                      \
  X(device_node_nodes, "... their search nodes (not in nodes)")                                         \
  X(device_node_hits, "... answered from their memo instead")                                           \
  X(device_node_witness, "... of the calls, answered by an earlier relaxed schedule, re-timed")        \
  X(device_node_unfinished, "... stopped at their node limit undecided (worth 0)")                      \
  X(device_node_skipped, "... not asked: the parent's stopped undecided (node_expansion.cc)")           \
  X(device_node_passed, "... of a device other than the root's, not asked: it seldom cuts")              \
  X(pruned_device, "children cut by a device relaxation (also in pruned_bound)")                        \
  X(pruned_pool, "open nodes dropped from the pool once an incumbent made them useless")                 \
  X(pool_full, "times a worker kept children out of the full pool (SolveOptions::pool_memory_bytes)")

// X(name, what it sums). Seconds summed over the workers (thread-seconds).
#define OPTPIPE_SEARCH_SECONDS(X) \
  X(bound_seconds, "thread-seconds in the node bounds (cpu: bound(); batch: evaluate and prune)")

struct SolveStats {
#define OPTPIPE_COUNTER_MEMBER(name, what) std::int64_t name = 0;
  OPTPIPE_SEARCH_COUNTERS(OPTPIPE_COUNTER_MEMBER)
#undef OPTPIPE_COUNTER_MEMBER
#define OPTPIPE_SECONDS_MEMBER(name, what) double name = 0;
  OPTPIPE_SEARCH_SECONDS(OPTPIPE_SECONDS_MEMBER)
#undef OPTPIPE_SECONDS_MEMBER

  // Nodes expanded at each depth (decisions from the root): where the tree lives. Summed.
  std::vector<std::int64_t> nodes_by_depth;

  // Set once by the search, not summed.
  std::int64_t transposition_stored = 0;  // states kept in the transposition table
  int threads = 0;                        // worker threads the search ran
  BoundsMode bounds_backend = BoundsMode::kCpu;  // what computed the bounds: kCpu, kTbb or kGpu
  // The single-stage relaxation at the root (bounds/single_stage_relaxation.h): the largest
  // bound it proved (0: none), its seconds and search nodes (where it ran before the search, as
  // root_lower_bound for `optpipe solve`'s warm starts, what it took there).
  double single_stage_bound = 0;
  double single_stage_seconds = 0;
  std::int64_t single_stage_root_nodes = 0;
  // The instance's time quantum (model/time_quantum.h) the search rounded its bounds to; 0: none.
  double time_quantum = 0;
  // The PCIe group energy bound at the root (bounds/group_energy_bound.h; 0: none applies).
  double group_energy_bound = 0;
  // The byte-time energy bound at the root (bounds/byte_energy_bound.h; 0: no memory binds).
  double byte_energy_bound = 0;
  // The PCIe group forward bound at the root (bounds/group_forward_bound.h; 0: no group has two
  // stages under memory pressure).
  double group_forward_bound = 0;
  // The device relaxation at the root (bounds/device_relaxation.h): the largest finished one (0:
  // none applies or none finished), its device, and the search nodes of all of them.
  double device_relaxation_bound = 0;
  int device_relaxation_device = -1;
  std::int64_t device_relaxation_nodes = 0;
  // ... how much its second pass, with the pair releases on the best device, raised that
  // device's bound (0: nothing; its search nodes are in device_relaxation_nodes).
  double device_pairs_raised = 0;
  std::int64_t lns_repairs = 0, lns_improvements = 0, lns_nodes = 0;  // the LNS phase (not in nodes)
  double lns_seconds = 0;
  std::int64_t beside_improvements = 0;  // the search beside the tree (SolveOptions::beside): incumbents it gave
  double beside_seconds = 0;             // ... and how long it ran before its thread joined the tree
  double seconds = 0, seconds_to_best = 0;

  // Counts one node expanded at `depth`.
  void count_node(int depth) {
    ++nodes;
    if (static_cast<int>(nodes_by_depth.size()) <= depth) nodes_by_depth.resize(static_cast<std::size_t>(depth) + 1, 0);
    ++nodes_by_depth[static_cast<std::size_t>(depth)];
  }

  // Adds another worker's counters, seconds and depth histogram to these.
  void merge(const SolveStats& o) {
#define OPTPIPE_COUNTER_ADD(name, what) name += o.name;
    OPTPIPE_SEARCH_COUNTERS(OPTPIPE_COUNTER_ADD)
    OPTPIPE_SEARCH_SECONDS(OPTPIPE_COUNTER_ADD)
#undef OPTPIPE_COUNTER_ADD
    if (nodes_by_depth.size() < o.nodes_by_depth.size()) nodes_by_depth.resize(o.nodes_by_depth.size(), 0);
    for (std::size_t k = 0; k < o.nodes_by_depth.size(); ++k) nodes_by_depth[k] += o.nodes_by_depth[k];
  }

  // Calls f(name, value, what) for every summed counter, in the table's order.
  template <class F>
  void for_each_counter(F&& f) const {
#define OPTPIPE_COUNTER_VISIT(name, what) f(#name, name, what);
    OPTPIPE_SEARCH_COUNTERS(OPTPIPE_COUNTER_VISIT)
#undef OPTPIPE_COUNTER_VISIT
  }
};

}  // namespace optpipe
