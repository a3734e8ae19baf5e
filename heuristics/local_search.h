// Local search: improves a feasible schedule by editing its device lists, every candidate
// measured by the simulator (spec §4, ../shared/spec/problem.md).
//
// Algorithm: iterated local search (ILS; H. R. Lourenço, O. C. Martin, T. Stützle, "Iterated
// Local Search", Handbook of Metaheuristics, 2003, §3): a first-improvement descent to a local
// optimum, then repeatedly a perturbation ("kick": a few random valid moves) of the current
// local optimum followed by a new descent; the new local optimum replaces the current one when
// its makespan is no worse (a walk on plateaus), the best one found is kept, and after
// `restart_after` kicks without a new best the walk goes back to the best. The kick grows by one
// move per kick without a new best, from kick_min to kick_max, then wraps around; a kicked
// schedule that deadlocks is replaced by a new kick with half as many moves (up to 5 tries, each
// one evaluation).
//
// From kUntriedFirstOps compute ops on, each descent step tries the moves not yet tried in vain
// in the current descent before those that were (don't-look bits, J. L. Bentley 1992; see
// LocalSearchOptions::untried_first): a descent still ends only where no move improves, and on
// the way it wastes fewer simulations on moves that failed a step before.
//
// Objective: a candidate that deadlocks (memory or a cycle between lists) is rejected; among
// feasible ones, the smaller makespan wins, ties (within kTimeEps) go to the smaller sum of the
// end times of all compute ops (it rewards moving work earlier where the makespan does not
// move yet, so that the descent can cross plateaus of the makespan).
//
// Moves (each edits one device list and keeps spec §3's structure; check_structure() would
// accept every result, see the tests):
//   1. kShift: a compute action moves by `delta` compute places in its list (|delta| = 1 is the
//      adjacent interchange of job-shop local search, P. J. M. van Laarhoven, E. H. L. Aarts,
//      J. K. Lenstra, "Job Shop Scheduling by Simulated Annealing", Oper. Res. 40(1), 1992;
//      larger |delta| is the insertion move). R entries keep their place between the compute
//      actions (their "gap"), except the R of a forward that moves past it (it moves along,
//      right after the F) and the R of a backward that moves before it (right before the B).
//      Two ops of one stage and type are never interchanged (FIFO), and an op is never put
//      before an op of the same microbatch on the same device that it depends on (that always
//      deadlocks, so the simulation is skipped).
//   2. kOffloadLevel: F(s,j) of an offloadable stage gets another offload level; from 0 its
//      R(s,j) is inserted (at the first or last place the R rules allow, or the latest place
//      where the reload would still end before B(s,j) starts in the current timing); to 0 the R
//      is removed; between two levels above 0 the R stays.
//   3. kReloadShift: an R moves by `delta` list places (it passes over compute actions, which
//      changes its request time, or over other Rs, which changes the channel order).
//   4. kOffloadSwap: a kept F(s,j) takes the offload level of F(s,j + delta), a near microbatch
//      of the same stage, which is kept instead (its R removed, R(s,j) inserted as for
//      kOffloadLevel). Where memory binds, turning one offload off deadlocks and turning one on
//      costs channel time, so neither single level move improves; the swap moves which
//      microbatch pays the round trip without changing how many do (on the 16 x 64 rows of
//      bench/README.md a descent of swaps alone took local-search optima 0.2-0.5% lower).
// The descent tries the moves that touch the critical ops first (ops whose start is bound by
// the previous op of their device, an input, a reload or memory, traced back from the op that
// ends last; with memory-bound starts, the forwards resident at that moment count too), in a
// seeded random order, then all other moves; it takes the first better candidate. (With
// critical_first = false all moves form one shuffled list; on gpt-8x24-tight that did better,
// on random mid-size instances slightly worse.) Neighbourhood
// per descent step: every adjacent interchange, shifts of critical ops up to max_shift places,
// every other level of each offloadable F (up to 3 R places), R moves by ±1 and ±2 places, and
// from kSwapOps compute ops on each kept offloadable F's swap with the offloaded F's of its stage
// up to kSwapReach microbatches away (the R at the latest place that hides the reload, and at
// the earliest). Kicks do not swap.
//
// Complexity: one evaluation is one simulation, O(N log N) for N actions (simulator.h), plus
// O(L) to edit and check the one list that changed (L its length). A descent step scans up to
// O(N · max_shift + F_off · (levels + kSwapReach)) neighbours, F_off the offloadable forwards;
// with untried first, one hash of each neighbour per step and a set of at most one entry per
// simulation of the descent.
// Determinism: the only budget is the number of evaluations and the only randomness a seeded
// generator of our own, so a given (instance, start, options) always gives the same result.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "model/instance.h"
#include "model/schedule.h"

namespace optpipe {

struct LocalSearchOptions {
  std::int64_t max_evaluations = 20000;  // simulator runs, the start's included (always run)
  // Stop after this many simulator runs without a new best (<= 0: never; the budget above holds).
  std::int64_t stall_evaluations = 0;
  std::uint64_t seed = 1;
  int kick_min = 2, kick_max = 8;        // random moves per perturbation
  int max_shift = 4;                     // kShift moves of critical ops by up to this many places
  int restart_after = 30;                // kicks without a new best before going back to the best
  bool critical_first = true;            // descent order: moves on critical ops first (else one shuffled list)
  // Set from outside to stop early (e.g. a time limit); the result is then the best so far and
  // depends on when it was set. Null: only the evaluation budget stops it (deterministic).
  const std::atomic<bool>* stop = nullptr;
  // A proven lower bound on the makespan: the search stops as soon as its best is within
  // kTargetTolerance of it (nothing better exists, up to the tolerance the solver's proofs use).
  // -inf: none.
  double target = -std::numeric_limits<double>::infinity();
  // A bound proven while the search runs (e.g. by a relaxation on another thread), read after
  // every kick's descent as a second target: null, none.
  const std::atomic<double>* live_target = nullptr;
  // Candidates are simulated from the latest checkpoint of the current solution that they share
  // (model/checkpointed_simulation.h; the same results, faster on long lists): this many
  // checkpoints, 0 for plain simulations, -1 for the default (default_checkpoints below).
  int checkpoints = -1;
  // kOffloadSwap moves in the descent: 1 yes, 0 no, -1 from kSwapOps compute ops on (below).
  int offload_swaps = -1;
  // Each descent step tries first the moves not yet tried in vain in this descent (don't-look
  // bits, see the header): 1 yes, 0 no, -1 from kUntriedFirstOps compute ops on (below).
  int untried_first = -1;
  // Called with each new best schedule (after a descent that beats every earlier local optimum,
  // the start's first descent included) and its makespan, from the searching thread: e.g. to
  // hand it to a tree search running beside (SolveOptions::beside). Null: none.
  std::function<void(const Schedule&, double makespan)> on_new_best;
};

// How many checkpoints the local search keeps by default (LocalSearchOptions::checkpoints = -1):
// none below kCheckpointOps compute ops, 8 up to kManyCheckpointOps, 16 from there on. Each
// candidate then replays only the list after the latest checkpoint it shares with the current
// solution. A throwaway driver, one thread, 20,000 simulations from the best heuristic, median
// of five (microseconds a simulation, plain / 8 checkpoints, the same schedules):
// offload-random-02 of random_offload.py --seed 7 (72 ops) 14.3 / 11.6, hetero-4x8 (96) 16.3 / 8.0, seed-29
// small-loop-04 (120) 11.5 / 7.7, v-4x8 (192) 21.2 / 13.8, gpt-8x24-tight (576) 83.4 / 61.6,
// gpt-8x32 (768) 99.7 / 53.9; at 24-36 ops (small-chain-03, small-unsplit-05) no gain, and 16
// checkpoints cost more than they save up to a few hundred ops (bench/README.md, "Checkpoints
// from 64 compute ops"; bench/heuristics_bench.cc's BM_LocalSearchCheckpoints).
inline constexpr int kCheckpointOps = 64;
inline constexpr int kManyCheckpointOps = 1024;
int default_checkpoints(long long compute_ops);

// How close to LocalSearchOptions::target counts as reaching it (ms): the single-stage
// relaxation returns its value less 1e-7 ms, and the solver's proofs hold up to 1e-6 ms.
inline constexpr double kTargetTolerance = 1e-6;

enum class MoveKind : std::uint8_t { kShift = 0, kOffloadLevel = 1, kReloadShift = 2, kOffloadSwap = 3 };
inline constexpr int kMoveKinds = 4;
// kOffloadSwap: how far (in microbatches of the stage) the offloaded partner of a kept F may be.
inline constexpr int kSwapReach = 2;
// The descent has kOffloadSwap from this many compute ops on (LocalSearchOptions::offload_swaps
// < 0), where the solve's rounds search from schedules near local optima (the scale path of
// solve_pipeline.h). There, from 30 s solves' schedules, 10,000 simulations end 0.2-1.2% lower
// with the swaps on the 16 x 64 rows of bench/README.md; below it the swaps change the search
// paths the solve's phases were measured with, and the results went either way (on
// gpt-8x24-tight five seeds of 20,000 simulations from the best heuristic 660.66 ms on average
// without them, 663.22 with; shared-pcie-4x8's quick search ended above the optimum that the
// tree then did not find in 10 s).
inline constexpr int kSwapOps = 2048;
bool default_offload_swaps(long long compute_ops);
// Untried moves first from this many compute ops on (LocalSearchOptions::untried_first < 0).
// At scale one search's whole budget is one descent (its neighbourhood has thousands of moves
// and about 1 in 170 tried improves); there, from 30 s solves' schedules, 10,000 simulations,
// seeds 1-3, mean without -> with: llama2-7b 16 x 64 4act 2244.57 -> 2233.19 ms, 28.3b 16 x 64
// 4act 2150.61 -> 2141.41, and 20,000 from 14.6b 16 x 64 4act's best heuristic 1256.10 ->
// 1238.89, with 3-6 times the descent steps. Below it the results went either way (from the
// best heuristic, 20,000 simulations: paper-gpt3-6.2b-v-8x24-2act 1458.93 -> 1411.96, but
// paper-gpt3-6.2b-8x24-3act 1161.79 -> 1170.36), and the small solves' phases were measured
// with the plain order.
inline constexpr int kUntriedFirstOps = 2048;
bool default_untried_first(long long compute_ops);
const char* to_string(MoveKind kind);

struct LocalSearchStats {
  std::int64_t evaluations = 0;   // simulator runs
  std::int64_t improvements = 0;  // descent steps taken (each strictly better than before)
  std::int64_t kicks = 0;         // perturbations that led to a descent
  std::int64_t new_best = 0;      // local optima better than every earlier one (the start's excluded)
  double start_makespan = 0, final_makespan = 0;
  std::array<std::int64_t, kMoveKinds> improvements_by_move{};  // descent steps by MoveKind
  std::array<std::int64_t, kMoveKinds> best_by_move{};          // ... that were on the way to the final best
};

// The target a search with `options` aims at now: the fixed one, or the live one once it has
// risen above it.
inline double current_target(const LocalSearchOptions& options) {
  return options.live_target ? std::max(options.target, options.live_target->load(std::memory_order_relaxed))
                             : options.target;
}

// Returns a schedule no worse than `start` (its makespan, by the simulator), carrying makespan,
// bubble, peak memory, status "feasible" and solver "<start's solver> + local search". `start`
// must pass check_structure() and complete; otherwise throws InputError.
Schedule improve_schedule(const Instance& instance, const Schedule& start, const LocalSearchOptions& options = {},
                          LocalSearchStats* stats = nullptr);

// ---- The moves, exposed for the tests ---------------------------------------------------------
namespace local_search {

struct Move {
  MoveKind kind = MoveKind::kShift;
  int device = 0;
  int index = 0;     // list index of the compute action (kShift), of the F (kOffloadLevel, the kept F of kOffloadSwap), of the R (kReloadShift)
  int delta = 0;     // kShift: compute places (+ later); kReloadShift: list places; kOffloadSwap: the partner's microbatch - this one's
  double r = 0;      // kOffloadLevel: the new level
  int position = 0;  // kOffloadLevel from 0 to r > 0, kOffloadSwap: insert R before this index of the list as it is (clamped into reload_range)
};

// Performs the edit on schedule.devices[move.device] as described in the header comment, without
// checking the result. Returns false (and leaves the list as it was) when the move does not
// apply: an index out of range, no compute action to pass, a kShift onto an op of the same stage
// and type, a level move on an F that is not offloadable or to its current level.
bool apply_raw(const Instance& instance, Schedule& schedule, const Move& move);

// spec §3 restricted to device d's list, for lists whose compute ops are those the instance puts
// on d (the moves never add or drop compute ops): FIFO per stage and type, offload levels, R
// present exactly for F with r > 0, after its F and before its B. Equal to
// check_structure(instance, schedule).empty() when the other lists are well formed.
bool list_well_formed(const Instance& instance, int device, const std::vector<Action>& list);

// True when some op of the list comes before an op of the same microbatch (same device) that it
// needs (F(s') before F(s) for s' > s; B before an F; B(s) before B(s') for s < s'; W(s) before
// B(s)): such a list always deadlocks.
bool list_self_deadlocks(const Instance& instance, const std::vector<Action>& list);

// apply_raw, then list_well_formed and !list_self_deadlocks; on failure the list is restored.
bool apply_move(const Instance& instance, Schedule& schedule, const Move& move);

// Every move of the full descent neighbourhood of `schedule` (all kShift by ±1..±max_shift, all
// level moves with the first and last R places, all kReloadShift by ±1 and ±2), unfiltered.
std::vector<Move> all_moves(const Instance& instance, const Schedule& schedule, int max_shift);

}  // namespace local_search
}  // namespace optpipe
