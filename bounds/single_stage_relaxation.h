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
//   - the makespan is at least every end plus the op's static tail (bound_problem.h, `tail`),
//     and, with `tails`, the tail of the last three B's (last_tails.h: the stages below run
//     those microbatches' B's and W's on one machine each, in some interleaving).
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
// rest of the B and W; each remaining F no earlier than the instant at which the earlier
// microbatches, releasing their activation at the earliest end of an offload or of their B and
// M_W at that of their W, can have left room for its activation, where the B's and the W's run
// in order and the offloads too, one at a time on the D2H channel, so that by an instant t at
// most as many of the microbatches not yet started can be offloaded as the channel can finish
// by t: offload-slow-pcie-4x8's stage 1 at cutoff 343.7 takes 8.2k nodes with that, 20.0k
// without, its stage 0 under the spec's rules at 341.92 145k instead of 157k; and the slot
// energy: where only k < m activations fit in cap, a dual feasible function (S. P. Fekete and
// J. Schepers, "New classes of fast lower bounds for bin packing problems", Math. Programming
// 91(1), 2001) counts each held activation as 1/k of the memory and each M_W as what k' held
// activations leave to the most M_W's that fit beside them, min over k' of (1 - k'/k) / that
// many, so that at every instant the held items count at most 1; each microbatch still holds its
// activation from where the device is free on for at least what its ops need (one not started:
// its F, then the round trip or its offload and reload, then its B; a kept one until its B's
// earliest end, after the B's before it in their order; an offloaded one until its offload ends
// and again for its B and the part of its reload after that instant), and while F(j) runs at most j - nb + 1 activations are held, while
// B(m - i) runs at most i, so the last B ends no earlier than the free time plus the counted
// holds plus those empty slots; the same with the M_W's up to the last W. And while any M_W is
// held, at most the activations that fit beside it are (two of 1.4 GiB in 4 GiB, but one beside
// an M_W of 1.3): each W that runs before B(m - 1) holds its M_W while it runs, so that time
// counts as a held slot too, unless the W runs after B(m - 1) (the least over how many do): the
// tokens and the W executions of the tree's memory energy bound (memory_energy_bound.h), here
// on the relaxation's own partial schedule, with one window from the device's free time on.
// Offload-slow-pcie-4x8's first stage: the bound at the root 229.06 -> 311.38 ms with the slots,
// 323.13 with the M_W's (its optimum 341.92), 153.7k -> 80.3k -> 40.7k nodes, 21.7k with the
// B's order in the holds; stage 1 8.2k -> 658 -> 213 -> 190. O(m) a node) and by dominance
// between states with the same counters and levels (times no later and memory no fuller at
// every instant from where a future reload could start on), which is sound here because the
// relaxed model is monotone (unlike the spec's list scheduling); a reload that a later one could
// still pull back is part of the key, and memory is compared from where a pull could reach. If
// the search ends within its node limit the optimum is exact; otherwise nothing is claimed (the
// bound is 0). On offload-slow-pcie-4x8 it gives 334.58 at the root and 338.82 and 341.92 along
// the best known schedule, CP-SAT's values for the same model (bench/README.md).
//
// The first stage under the spec's start rules (StartRules::kSpecFirstStage). The free model
// lets a forward wait at will, and its optimum uses that: on offload-slow-pcie-4x8 it holds a
// first-stage forward back after a W so that a reload takes the memory first (bench/README.md).
// In the spec a first-stage forward has no input: F(0, j) starts at max(now, memory fit), where
// now is the end of the compute op before it, and at equal times a forward's start comes before
// a reload's (spec 4). Every spec schedule's stage 0 therefore also obeys, on top of the free
// model:
//   (a) a W starts when the op before it ends (its B ended before that);
//   (b) a forward starts when the op before it ends, unless memory blocks it on the whole wait:
//       then reloads that started strictly before each instant of the wait fill the memory;
//   (c) only a B may wait at will (its input comes from stage 1), which moves the ops after it.
// The search keeps that: a forward starts at its earliest fit after the op before it, or at a
// later offload end (the memory only falls there, as in the free model) if the reloads it needs
// can be forced to start before each instant of the wait: the first pending ones, in channel
// order, each strictly before its deadline, as late as that allows, after its offload and the
// channel's earliest free time, and fitting in the memory before the deadline; they are placed
// at once. Or the last B and the W's after it move later (c) so that the forward starts at a
// later offload end; their releases move with them, which is what the free model missed. Only a
// B that waits directly before a forward (with W's between) matters: a B followed by another B
// can as well run at once, the later B waiting instead. The B's reload stays where it was; that
// holds its memory earlier, when no op of the stage needs it (later reloads start after it on
// the channel, and the ops after the B start after its end). A forced reload that would need an
// earlier placed reload pulled back is not modelled: the forward may then wait unforced, which
// is weaker and still sound. Spec schedules satisfy all this, and their timelines restricted to
// the stage, with reloads at their latest placements, are points of this model; so the optimum
// is still a lower bound, and at least the free model's (it only adds constraints). At a node the
// history's ops stay where they are (so no block of the history moves), which is why the history
// value needs no monotonicity: every completion of every node with that history obeys (a)-(c)
// from the history's last op on. The node's own times are not used with these rules: a later
// device free time can lower the value (a forward then starts later), so the node memo's
// monotone answers would not hold. Values: offload-slow-pcie-4x8, along the best known
// schedule, 341.92 from decision 15 on (the free model: 338.82 until decision 45), which is what
// proves 341.92 optimal (bench/README.md). Checked like the free model, against plain
// enumeration, proven optima (solved without it), good and random schedules along their paths,
// and the brute-force oracle (tests/single_stage_relaxation_test.cc).
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

#include <atomic>
#include <cstdint>
#include <limits>
#include <vector>

#include "model/action.h"
#include "bounds/bound_problem.h"
#include "bounds/node_transfers.h"
#include "model/instance.h"

namespace optpipe {

// Which start rules the relaxed stage obeys (see above).
enum class StartRules {
  kFree,            // timing free: ops may start later than they could
  kSpecFirstStage,  // stage 0 only: its forwards start as the spec starts them
};

struct SingleStageRelaxation {
  double bound = 0;          // a lower bound on the makespan (0: not applicable, or not finished)
  bool applicable = false;   // the stage fits the model (see above)
  bool finished = false;     // the search ended within its node limit (then `bound` is valid)
  // Finished and a relaxed schedule below the cutoff was found: `bound` is the relaxed optimum
  // (less a hair). Otherwise a finished search only shows the optimum is at least the cutoff.
  bool exact = false;
  // Stopped at the first relaxed schedule at or below `floor` (single_stage_relaxation): the
  // relaxed optimum is no larger, so the stage cannot raise a bound already that high; `bound`
  // is 0 and `finished` true (the answer is complete: nothing to claim).
  bool below_floor = false;
  std::int64_t nodes = 0;    // search nodes
  // At the root (single_stage_relaxation), when exact: the relaxed optimum's ops of the stage
  // in list order (F with its level, B and W by start, each reload right after the last op
  // that ends by its start), a guide for warm starts (heuristics/warm_starts.h). The relaxed
  // schedule need not be one the spec can run, but on offload-slow-pcie-4x8 the local search
  // gets from it to the optimum in about 300 simulations, where from the heuristics it takes
  // 90k. When below_floor: the order of the relaxed schedule it stopped at (a guide too).
  std::vector<Action> order;
};

// Stage s at the root: `head` [op] holds lower bounds on the starts of its F and B (e.g.
// compute_heads at the root; empty, or NaN for an op: 0). `cutoff`: a makespan known to be
// reachable (e.g. the incumbent); the search proves only whether the relaxed optimum is below it,
// and then returns min(relaxed optimum, cutoff). `node_limit` and `seconds` (<= 0: none): the
// search stops there, unfinished. `prune` false: no bound and no dominance, a plain enumeration
// of the same model (the tests' reference).
// `pairs`: with the pair releases (pair_releases.h; false: each B with its own chain only).
// `floor`: a lower bound known elsewhere (e.g. the root's other bounds); the search stops at the
// first relaxed schedule that ends at or below it (`below_floor`), since then the stage cannot
// raise the bound. On offload-fast-pcie-4x8 the root's bounds already reach the optimum and the
// four stages' searches took 0.33 s to show nothing more (one never finished in 200k nodes).
// `stop` (null: none): once set, the search stops unfinished (polled every 1024 nodes).
// `tails`: with the last tails (last_tails.h: the last three B's through the stages below as
// machines, not the last B's static tail alone). A higher optimum, but a harder search: the
// search's own bound sees the tail only once the last B's are near, so on `optpipe generate
// --model gpt3-14.6b --devices 6 --microbatches 10 --memory-limit 4act` stages 1 and 2 no longer
// finish in 2M nodes (608k and 80k without); at 8 microbatches they finish and rise by up to
// 7.7 ms (stage 4: 310.91 -> 318.64; measured with the last two B's). Callers run it after the
// plain search, with a budget.
SingleStageRelaxation single_stage_relaxation(const Instance& instance, const BoundProblem& problem, int s,
                                              const std::vector<double>& head, double cutoff,
                                              std::int64_t node_limit, double seconds = 0, bool prune = true,
                                              StartRules rules = StartRules::kFree, bool pairs = true,
                                              double floor = -std::numeric_limits<double>::infinity(),
                                              const std::atomic<bool>* stop = nullptr, bool tails = false);

// Whether stage s fits the model (the conditions above; kSpecFirstStage: and s = 0).
bool single_stage_relaxation_applies(const Instance& instance, const BoundProblem& problem, int s,
                                     StartRules rules = StartRules::kFree);

// The strongest rules that apply to stage s: kSpecFirstStage where they do, else kFree.
StartRules strongest_start_rules(const Instance& instance, const BoundProblem& problem, int s);

// Stage s at a search node: what started stays where it is (its ends in `node`, its offload
// levels and transfers in `transfers`, an offload not yet started as early as its channel
// allows), the rest as above from the node's heads `head` [op], the device's and channels' free
// times and the makespan so far. A lower bound for every completion of the node.
SingleStageRelaxation single_stage_relaxation_at_node(const Instance& instance, const BoundProblem& problem, int s,
                                                      const NodeTimes& node, const NodeTransfers& transfers,
                                                      const std::vector<double>& head, double cutoff,
                                                      std::int64_t node_limit, bool pairs = false,
                                                      bool tails = false);

// The same from stage s's own history only (its ops that started, their times and transfers),
// without the node's time, heads or other free times: weaker, but the same for every node with
// that history, so a search can keep it in a memo keyed by single_stage_history_key. With
// kSpecFirstStage too: every completion of every node with that history obeys the rules from the
// history's last op on (the argument above needs no monotonicity).
SingleStageRelaxation single_stage_relaxation_of_history(const Instance& instance, const BoundProblem& problem, int s,
                                                         const NodeTimes& node, const NodeTransfers& transfers,
                                                         double cutoff, std::int64_t node_limit,
                                                         StartRules rules = StartRules::kFree, bool pairs = false,
                                                         bool tails = false);
std::vector<double> single_stage_history_key(const Instance& instance, const BoundProblem& problem, int s,
                                             const NodeTimes& node, const NodeTransfers& transfers);

// What single_stage_relaxation_at_node reads beyond stage s's history: the device's free time,
// the makespan so far, the channels' free times and the heads of the stage's F and B that have
// not started. The relaxation is non-decreasing in each of them (each is a lower bound on a
// start or an end, or delays an offload's end, and the model is monotone), so of two nodes with
// the same single_stage_history_key, the one whose params are no larger everywhere has no larger
// relaxation: a search can answer one node from another's value (search/stage_relaxations.h, StageRelaxations::at_node).
// single_stage_node_key is the history key plus which listed offloads have started (a started
// one ends where it ends, one not started where the channel lets it, which is not the same
// function of the params), so nodes compare only under equal node keys.
std::vector<double> single_stage_node_key(const Instance& instance, const BoundProblem& problem, int s,
                                          const NodeTimes& node, const NodeTransfers& transfers);
std::vector<double> single_stage_node_params(const Instance& instance, const BoundProblem& problem, int s,
                                             const NodeTimes& node, const NodeTransfers& transfers,
                                             const std::vector<double>& head);

}  // namespace optpipe
