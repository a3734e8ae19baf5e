// Single-stage relaxation: a lower bound from one stage alone on its device, with its memory
// limit and its offload choices, solved exactly by a small search (issue 3; the measurements
// that call for it are in bench/README.md, "Which bound would cut the witness's path early").
//
// The relaxed problem keeps, of every schedule of the spec, only what concerns stage s:
//   - its F, B and W run one at a time on its device (FIFO per type), F(s, j) not before its
//     head, B(s, j) not before F(s, j)'s end + latency[s] (the forward chain up and the
//     backward chain back, bound_problem.h) nor before its head, W(s, j) after B(s, j);
//   - its memory: cap = limit - static (+ the simulator's tolerance); F's start adds the
//     activation, B's end removes activation - M_W, W's end removes M_W;
//   - a forward may be offloaded whole (level 1): its offload runs on the device's D2H channel
//     after its F, offloads one at a time in microbatch order, and removes the activation at its
//     end; its reload adds the activation back at its start, starts after its offload ended,
//     runs on the H2D channel one at a time in microbatch order, and ends before its B starts;
//   - the makespan is at least every end plus the op's static tail (bound_problem.h, `tail`).
// Timing is free (ops may start later than they could), so the relaxed optimum is no larger than
// the makespan of any schedule of the spec: every spec schedule's timeline, restricted to the
// stage, is a point of this model (spec §4: a reload in the spec starts no later than its B
// and after its offload; the rest are the same constraints, or weaker). Reloads are placed as
// late as they can be: given the B starts, the placement that ends each reload at its B's start
// unless the next reload needs the channel, and then where the next one starts (backward from
// the last: end(j) = min(start of B(j), start of the next reload)), holds every activation for
// the least time at every instant of all placements the channel allows, so if any placement fits
// in memory, it does. The search keeps that placement as it goes: when it places B(j), the
// reload of j ends at B(j)'s start and earlier reloads that would still run then are pulled
// back down the chain (only reloads the search placed; one that started before the node stays).
//
// Search: depth first over the device's next op in time order (F at level 0 or 1, B, W), each
// starting as early as its inputs, the device and memory allow, except that a forward may also
// start at any later offload end (waiting for that release can make room for a reload that a
// later B needs: starting every forward as early as possible misses optima). Pruned by a simple
// bound (remaining work; for each remaining B, its F chain, latency, head and reload, then the
// rest of the B and W) and by dominance
// between states with the same counters and levels (times no later and memory no fuller at
// every instant from where a future reload could start on), which is sound here because the
// relaxed model is monotone (unlike the spec's list scheduling); a reload that a later one could
// still pull back is part of the key, and memory is compared from where a pull could reach. If
// the search ends within its node limit the optimum is exact; otherwise nothing is claimed (the
// bound is 0). On offload-slow-pcie-4x8 it gives 334.58 at the root and 338.82 and 341.92 along
// the best known schedule, CP-SAT's values for the same model (bench/README.md).
//
// Applies to a stage alone on its device, with a split backward, under memory pressure, whose
// instance's offload levels are 0 and 1 only (other levels: not yet modelled; the bound is 0).
//
// Checked (tests/single_stage_relaxation_test.cc) against the solver's proven optima and random
// schedules' makespans on random plain pipelines, and against the plain enumeration of the same
// model; a Python prototype of the same search was also never above the solver's results on the
// 72 single-stage variants of bench/solvers/random_offload.py's instances.
//
// Complexity: exponential in the worst case (a search), bounded by the node limit; each node
// costs O(events) = O(m) for the memory profile and O(entries) for the dominance test.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/bounds/bound_problem.h"
#include "engine/bounds/node_transfers.h"
#include "engine/instance.h"

namespace optpipe {

struct SingleStageRelaxation {
  double bound = 0;          // a lower bound on the makespan (0: not applicable, or not finished)
  bool applicable = false;   // the stage fits the model (see above)
  bool finished = false;     // the search ended within its node limit (then `bound` is valid)
  // Finished and a relaxed schedule below the cutoff was found: `bound` is the relaxed optimum
  // (less a hair). Otherwise a finished search only shows the optimum is at least the cutoff.
  bool exact = false;
  std::int64_t nodes = 0;    // search nodes
};

// Stage s at the root: `head` [op] holds lower bounds on the starts of its F and B (e.g.
// compute_heads at the root; empty, or NaN for an op: 0). `cutoff`: a makespan known to be
// reachable (e.g. the incumbent); the search proves only whether the relaxed optimum is below it,
// and then returns min(relaxed optimum, cutoff). `node_limit` and `seconds` (<= 0: none): the
// search stops there, unfinished. `prune` false: no bound and no dominance, a plain enumeration
// of the same model (the tests' reference).
SingleStageRelaxation single_stage_relaxation(const Instance& instance, const BoundProblem& problem, int s,
                                              const std::vector<double>& head, double cutoff,
                                              std::int64_t node_limit, double seconds = 0, bool prune = true);

// Whether stage s fits the model (the conditions above).
bool single_stage_relaxation_applies(const Instance& instance, const BoundProblem& problem, int s);

// Stage s at a search node: what started stays where it is (its ends in `node`, its offload
// levels and transfers in `transfers`, an offload not yet started as early as its channel
// allows), the rest as above from the node's heads `head` [op], the device's and channels' free
// times and the makespan so far. A lower bound for every completion of the node.
SingleStageRelaxation single_stage_relaxation_at_node(const Instance& instance, const BoundProblem& problem, int s,
                                                      const NodeTimes& node, const NodeTransfers& transfers,
                                                      const std::vector<double>& head, double cutoff,
                                                      std::int64_t node_limit);

// The same from stage s's own history only (its ops that started, their times and transfers),
// without the node's time, heads or other free times: weaker, but the same for every node with
// that history, so a search can keep it in a memo keyed by single_stage_history_key.
SingleStageRelaxation single_stage_relaxation_of_history(const Instance& instance, const BoundProblem& problem, int s,
                                                         const NodeTimes& node, const NodeTransfers& transfers,
                                                         double cutoff, std::int64_t node_limit);
std::vector<double> single_stage_history_key(const Instance& instance, const BoundProblem& problem, int s,
                                             const NodeTimes& node, const NodeTransfers& transfers);

// What single_stage_relaxation_at_node reads beyond stage s's history: the device's free time,
// the makespan so far, the channels' free times and the heads of the stage's F and B that have
// not started. The relaxation is non-decreasing in each of them (each is a lower bound on a
// start or an end, or delays an offload's end, and the model is monotone), so of two nodes with
// the same single_stage_history_key, the one whose params are no larger everywhere has no larger
// relaxation: a search can answer one node from another's value (solver.cc, node_relaxation).
// single_stage_node_key is the history key plus which listed offloads have started (a started
// one ends where it ends, one not started where the channel lets it, which is not the same
// function of the params), so nodes compare only under equal node keys.
std::vector<double> single_stage_node_key(const Instance& instance, const BoundProblem& problem, int s,
                                          const NodeTimes& node, const NodeTransfers& transfers);
std::vector<double> single_stage_node_params(const Instance& instance, const BoundProblem& problem, int s,
                                             const NodeTimes& node, const NodeTransfers& transfers,
                                             const std::vector<double>& head);

}  // namespace optpipe
