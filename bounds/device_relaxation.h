// Device relaxation: a lower bound from one device's stages alone (two or more: V and loop
// placements), with the device's memory, solved exactly by a small search (issue 21: the small
// V and loop instances whose proofs took seconds are bound by memory on one device, which no
// other bound sees; bench/README.md, "Small instances against CP-SAT").
//
// The relaxed problem keeps, of every schedule of the spec, only what concerns device d and the
// stages s_0 < s_1 < ... it holds:
//   - their F, B and W run one at a time on d (FIFO per stage and type), each op no earlier than
//     its head (`head`, e.g. the root's heads, heads.h);
//   - F(s_i, j) not before F(s_{i-1}, j)'s end plus the forward chain between them (the F of the
//     stages in between and the comms); B(s_i, j) not before B(s_{i+1}, j)'s end plus the
//     backward chain between them, nor before F(s_i, j)'s end + latency[s_i] (bound_problem.h);
//     W(s_i, j) after B(s_i, j);
//   - memory: cap = limit - static (+ the simulator's tolerance); an F's start adds its
//     activation, a B's end removes activation - M_W (all of it unsplit), a W's end M_W;
//   - the makespan is at least every op's end plus its static tail (BoundProblem::op_tail), and
//     the tail of each stage's last three B's through the stages below (last_tails.h; here
//     always: these searches are small, and on the V and loop instances of
//     bench/solvers/random_small.py it changed no proof's time beyond noise).
// Optionally (`pairs`), the pair releases (pair_releases.h) of each stage whose next stage is
// on another device: B(s, j) and B(s, j + 1) no earlier than the later devices can return both
// microbatches, given the ends of F(s, j) and F(s, j + 1) (each alone returns after the latency,
// two entering close together cannot both). The search branches over the release pairs that are
// not dominated where it places F(s, j + 1) while B(s, j) waits: every spec schedule follows one
// of the orders whose releases they are (pair_releases.h), so each is a point of one branch. On
// small-v-02 of bench/solvers/random_small.py (seed 11) that lifts device 3 from 43.57 ms to
// 43.77, the optimum, where without them the tree had to close the 0.2 ms itself (about 110k
// nodes). The search over the pairs is larger, and its relaxed optimum's order a different guide
// (search/solver.cc runs it second, for the bound only).
// Every stage of the device must be unable to offload (then nothing but its own B and W frees
// its memory). Every spec schedule's timeline, restricted to d, satisfies all of this, so the
// relaxed optimum is no larger than any feasible makespan. The other devices are only latencies
// and heads here: what the relaxation sees is that memory on d limits how many microbatches can
// be between their F and B at once while each takes the whole round trip through the later
// stages (on small-v-04 of bench/solvers/random_small.py, 4 activations of room for 4
// microbatches of two stages: two waves, the optimum 33.23 ms, where the root's other bounds
// give 27.26).
//
// Why a search and not a formula: on one machine in a fixed order, the memory at an F's start
// is the sum of what the earlier ops added and freed (they all ended: the machine runs one op at
// a time), so it depends on the order only, and each op's best start is the earliest its
// releases and the machine allow (a later start never helps an op after it: nothing else frees
// memory). The search is over orders: depth first, the next op of the device among those whose
// FIFO predecessors are placed and whose F fits in memory, earliest start first, skipping every
// op that cannot start before a waiting B or W could have ended (the active schedules of B. Giffler,
// G. L. Thompson, "Algorithms for solving production-scheduling problems", Operations Research
// 8(4), 1960: in any completion that runs such an op next, running that B or W first instead
// starts nothing later and frees its memory sooner, so one no worse completion starts with it;
// not an F, whose memory could keep a later F out); pruned by
// max(makespan so far, device free time + the work left, Jackson's preemptive one-machine bound
// of the ops left with their heads, releases and tails: one_machine_bound.h, where past the
// search's first 1000 nodes each F is also released no earlier than the device's memory can have
// room for it: the q-th F placed from now waits until the B's and W's, each at its earliest end,
// can have freed what q more activations need beyond the room left; past its first 2000 nodes
// every op's release is also carried along what precedes it, the stage's FIFO order and the
// chains: a B whose F is not placed yet no earlier than that F's release plus its duration and
// the latency, the next B of the stage no earlier than this one's release plus its duration, and
// so on, so that the memory's delay of the forwards reaches their backwards) against the best
// found (initially the cutoff), and by dominance between states with the same counters (a state whose free time,
// makespan so far and effective releases of the waiting B's and F's are no later than another's
// has no worse completion: every start is a non-decreasing function of them). If the search ends
// within its node limit, its value is exact (below the cutoff) or proves the optimum is at least
// the cutoff; the bound is that value less 1e-7 ms (a relaxation's own additions may round above
// a simulator's, search/stage_relaxations.h's tolerance lifts it back at the cutoff).
//
// The releases along the chains: on the searches that run long, near a proof at the tree's
// nodes (search/node_expansion.cc gives them 20k nodes where the others get 2k), most stopped at
// their limit undecided, and the search asked again below. Seed-11 small-loop-03 of
// bench/solvers/random_small.py, probing from its optimum on one thread (bench/probing_work):
// its first target, 0.1% above the root bound, 5.6M relaxation nodes for 1,670 tree nodes, 818
// calls stopped at 20k; with them the whole proof takes 14.1M relaxation nodes instead of 35.7M,
// and `optpipe solve --time-limit 10` proves its optimum, 42.30 ms, in 8.2 s where it stopped at
// 42.48 / 41.72. From the first node they cost more than they cut (their Jackson's bound has
// most jobs released late, O(l^2): seed-7 small-v-06, probing, 6.22G -> 6.98G instructions with
// 10% fewer nodes); past 2000 nodes the 16 slowest V and loop instances of the seven seeds keep
// their tree nodes (relaxation nodes 6.14M -> 5.89M) and the 109 their CPU time (7.56 s both
// ways, one thread, min of 3 runs).
// Complexity: exponential in the worst case, bounded by the node limit; per search node O(k)
// candidates (k stages on the device; with the pairs, each forward at most S - s + 1 branches),
// O(n + l^2) for Jackson's bound of the n = 3·k·m ops in its closed form by tail, l of them
// released after the free time (O(n log n) by the rule itself where l > 24), O(n) for the
// releases along the chains, and O(k·m) for the dominance key and comparison (dominance_memo.h). The pair releases' orders: O(S^3) per stage, once (pair_releases.h).
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "bounds/bound_problem.h"
#include "bounds/last_tails.h"
#include "model/action.h"
#include "model/instance.h"

namespace optpipe {

// The device relaxation's search carries releases along the chains past this many of its nodes
// (see above; a parameter so that the tests can take them from the first node).
inline constexpr std::int64_t kChainReleasesFrom = 2000;

struct DeviceRelaxation {
  double bound = 0;         // a lower bound on the makespan (0: not applicable, or not finished)
  bool applicable = false;  // the device fits the model (device_relaxation_applies)
  bool finished = false;    // the search ended within its limits (then `bound` is valid)
  bool exact = false;       // finished below the cutoff: `bound` is the relaxed optimum (less a hair)
  std::int64_t nodes = 0;   // search nodes
  // The makespan of the best relaxed schedule found (infinity: none): an upper bound on the
  // relaxed optimum, also when the search stopped there (below-only, at a node).
  double upper = std::numeric_limits<double>::infinity();
  // When exact: the device's ops in the order of the relaxed optimum (a valid list for the
  // device, with no R: none of its stages offloads), a guide for warm starts
  // (heuristics/warm_starts.h), like the single-stage relaxation's.
  std::vector<Action> order;
  // device_relaxation_at_node, stopped by a relaxed schedule below the cutoff that its search
  // met: the ops it placed, in their order (not the node's started ones), which another node's
  // question can try first (`witnesses` there).
  std::vector<Action> witness;
  // device_relaxation_at_node answered by witnesses[witness_index], re-timed at the node, without
  // a search (nodes 0; `upper` is that relaxed schedule's makespan, below the cutoff).
  bool from_witness = false;
  int witness_index = -1;
};

// Whether device d fits the model: it holds two to eight stages, none of them can offload, and
// its memory can bind (its room is less than every microbatch's activations of all its stages).
bool device_relaxation_applies(const Instance& instance, const BoundProblem& problem, int d);
// The devices it applies to, in order (the root's relaxations, the nodes' other devices, tests).
std::vector<int> device_relaxation_devices(const Instance& instance, const BoundProblem& problem);

// Device d with heads `head` [op] (empty, or NaN for an op: 0) and `cutoff` (the search proves
// only whether the relaxed optimum is below it, and then returns min(optimum, cutoff) less a
// hair). `node_limit` and `seconds` (<= 0: none) stop the search, unfinished. `prune` false: no
// bound and no dominance, a plain enumeration of the same model (the tests' reference).
// `pairs`: with the pair releases (see above). `floor`: a bound known already; the search stops,
// unfinished, at its first relaxed schedule at most it (its value could not raise the bound).
// `chain_releases_from`: the releases along the chains past this many nodes (see above).
DeviceRelaxation device_relaxation(const Instance& instance, const BoundProblem& problem, int d,
                                   const std::vector<double>& head, double cutoff, std::int64_t node_limit,
                                   double seconds = 0, bool prune = true, bool pairs = false,
                                   double floor = -std::numeric_limits<double>::infinity(),
                                   std::int64_t chain_releases_from = kChainReleasesFrom);

// Device d at a search node: what started stays where it is (its ends in `node`), the rest as
// above from the node's heads `head` [op], the device's free time and the makespan so far. A
// lower bound for every completion of the node: each completion's ops on d, after the node's,
// are a point of the same model. It only answers whether the relaxed optimum reaches `cutoff`
// (a search asks it to cut the node): finished with bound = cutoff (less a hair) when it does;
// when the search meets a relaxed schedule below the cutoff it stops there, unfinished (bound 0),
// which is what keeps it cheap where it cannot cut. `tails` (null: computed here): every stage's
// last_tail_choices(problem, s) (last_tails.h), which a search asking at many nodes computes once.
// `witnesses` (null: none): orders of d's ops not started (DeviceRelaxation::witness of earlier
// questions), tried first in turn: each is run from the node as the search would place its ops
// (each at its earliest start; O(n)), and the first that is a relaxed schedule of this node (FIFO
// per stage and type, every input placed before, every F fitting in memory, every op of d not
// started) ending below the cutoff answers without a search, which would stop at the first such
// schedule anyway (nodes that differ by a decision on another device, or a little later heads,
// mostly still have the last node's). The answer is the same either way: no cut.
// Complexity: O(w·n) for w witnesses before the search.
DeviceRelaxation device_relaxation_at_node(const Instance& instance, const BoundProblem& problem, int d,
                                           const NodeTimes& node, const std::vector<double>& head, double cutoff,
                                           std::int64_t node_limit, const std::vector<LastTails>* tails = nullptr,
                                           const std::vector<std::vector<Action>>* witnesses = nullptr,
                                           std::int64_t chain_releases_from = kChainReleasesFrom);

// What device_relaxation_at_node reads of a node: the key, the ops of d that started with their
// ends (and their counts per stage and type), equal for the nodes a memo compares; and the
// params, the device's free time, the makespan so far and the heads of d's ops not started, in
// which the relaxation is non-decreasing (each is a lower bound on a start or on the makespan,
// and the model is monotone), so a memo can answer one node from another
// (search/relaxation_memo.h).
std::vector<double> device_relaxation_node_key(const BoundProblem& problem, int d, const NodeTimes& node);
std::vector<double> device_relaxation_node_params(const BoundProblem& problem, int d, const NodeTimes& node,
                                                  const std::vector<double>& head);

}  // namespace optpipe
