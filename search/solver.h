// The exact solver: parallel branch-and-bound over the spec's schedules (issue 3).
//
// Schedules are generated in time order (schedule generation scheme): the simulator runs with
// open lists (Simulator::start_open) and stops whenever a device is idle with its list used up;
// the search branches over that device's next action (the next F of one of its stages with
// each allowed offload level, the next B, the next W, or the next reload R). Every valid
// schedule of spec §3 is a path in this tree, so the search space is exactly the spec's; only
// branches proven dominated are cut (candidates.h, node_expansion.h and
// Simulator::forward_wait_never_ends document each rule and its proof), and nodes whose state
// another node dominates (transposition.h). Nodes are
// bounded by the maximum of the critical-path bound, a one-machine (Jackson preemptive) bound
// per device and per PCIe channel, and a memory energy bound per stage, on heads that include
// the memory and reload precedences (bounds/); a node whose bound reaches the incumbent
// is pruned. The root's bound also takes the single-stage relaxation of each stage that it
// applies to (bounds/single_stage_relaxation.h; 5% of the time limit, at most 2 s) and the device
// relaxation of each device with several stages that cannot offload (bounds/device_relaxation.h), which
// is valid for the whole tree and so floors the reported bound; with offload, every child also
// takes the relaxation of each stage's own history (what that stage did so far), which many
// nodes share and a memo answers; the first stage's follows the spec's start rules (a forward
// with no input starts when the op before it ends unless memory blocks it).
//
// The first incumbent is the best warm start (callers pass the heuristics' schedules, improved
// by local search: heuristics/warm_starts.h); an optional large neighbourhood search (lns.h)
// may improve it before the tree. The bound reported is the largest proven so far.
//
// Workers (TBB) take the open node with the smallest bound and dive depth-first from it,
// returning the siblings they pass to the shared pool; they share the incumbent. An open node is
// stored as its decision path and replayed on the simulator when taken. A search that runs out
// of open nodes worth exploring has proven its incumbent optimal (or the instance infeasible),
// and then the makespan does not depend on the thread count; the node count may. Stopped early
// (time, nodes, gap, Ctrl-C), it returns the incumbent with the smallest bound still open.
//
// The parts, one file each: the open nodes (node_pool.h, search_node.h), what the threads share
// (search_shared.h: incumbent, proven bound, limits), the relaxations and their memos
// (stage_relaxations.h, relaxation_memo.h), expanding a node (node_expansion.h), the two kinds of
// worker (dive_worker.h; batch_worker.h for BoundsMode::kTbb/kGpu), the monitor thread
// (search_monitor.h) and the statistics (search_stats.h); solver.cc sequences them.
//
// Complexity: exponential in the worst case, as any exact method for this NP-hard problem; per
// node, one incremental simulation step per candidate and O(S·m²) for the bounds (the memory
// rules and the energy bound; the others are O(S·m log m)).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/action.h"
#include "model/instance.h"
#include "model/schedule.h"
#include "model/validator.h"  // obviously_infeasible
#include "search/bounds_mode.h"
#include "search/cut_frontier.h"
#include "search/search_stats.h"

namespace optpipe {

struct SolveProgress {
  double seconds = 0;
  std::int64_t nodes = 0;        // nodes expanded
  std::int64_t open = 0;         // open nodes in the pool
  double incumbent = std::numeric_limits<double>::infinity();
  double bound = 0;              // proven lower bound on the optimum
  double gap = std::numeric_limits<double>::infinity();  // (incumbent - bound) / incumbent
};

// A neighbourhood of a schedule for large neighbourhood search (lns.h): the actions of the
// microbatches with free_microbatch[j] == 0 keep the order they have in `guide`'s lists (and
// their offload levels); the free microbatches' actions may go anywhere between them.
struct Neighbourhood {
  Schedule guide;
  std::vector<char> free_microbatch;  // [j]
};


struct RootBound;  // below
class MonotoneMemo;  // relaxation_memo.h

// What a primal search running beside the tree (SolveOptions::beside) is given.
struct BesideTree {
  // Set once the tree is over (proven, or a limit or the caller stopped it): return soon.
  const std::atomic<bool>* stop = nullptr;
  // The tree's proven lower bound, rising while it runs (e.g. LocalSearchOptions::live_target).
  const std::atomic<double>* bound = nullptr;
  // A complete, feasible schedule and its makespan (by the simulator): it becomes the incumbent
  // when better, which cuts the tree's nodes at once. Thread-safe.
  std::function<void(const Schedule&, double makespan)> offer;
};

struct SolveOptions {
  double time_limit = std::numeric_limits<double>::infinity();  // seconds
  std::int64_t node_limit = -1;        // < 0: none
  double gap = 0.0;                    // stop when (incumbent - bound) / incumbent <= gap
  int threads = 0;                     // 0: all hardware threads
  const std::atomic<bool>* stop = nullptr;   // set from outside (e.g. Ctrl-C) to stop early
  std::function<void(const SolveProgress&)> on_progress;  // called about every progress_interval s
  std::function<void(double)> on_root_bound;              // called once with the root node's bound
  double progress_interval = 1.0;
  // Memory for open nodes (simulator snapshots). Beyond it, workers explore depth-first
  // without adding to the pool, which keeps the search exact but less best-first.
  double pool_memory_bytes = 1024.0 * 1024.0 * 1024.0;
  // Cut nodes whose state another node dominates (search/transposition.h), keeping at
  // most this many bytes of states.
  bool transposition = true;
  double transposition_memory_bytes = 256.0 * 1024.0 * 1024.0;
  // Search only this neighbourhood (then the result is not a proof about the whole space:
  // status is at best "feasible"). Null: the whole space.
  const Neighbourhood* neighbourhood = nullptr;
  BoundsMode bounds = BoundsMode::kCpu;
  int batch_size = 0;  // batch modes: most open nodes expanded per batch; 0: adaptive (up to 1024)
  // Before the tree search, improve the incumbent by large neighbourhood search (lns.h) for at
  // most this share of the time limit (0: off). Deterministic budgets; skipped when the root
  // bound already proves the warm start optimal. Off by default: after the local search of the
  // warm starts (heuristics/warm_starts.h) it improved none of 17 random tight instances nor
  // any shipped one; from weak starts it helps.
  double lns_time_share = 0.0;
  // A lower bound on the optimum proven elsewhere, e.g. by an earlier run on the same instance
  // (the schedule cache keeps the best one: cache/cache_lookup.h). The bound reported is never
  // below it, and an incumbent that reaches it is optimal (the search stops). It cuts no node by
  // itself: every subtree's best is at least the optimum anyway. 0: none.
  double known_bound = 0.0;
  // Only schedules of makespan at most this are wanted (a target makespan, as in destructive
  // improvement: Klein & Scholl, "Computing lower bounds by destructive improvement", EJOR 112,
  // 1999): every node whose bound passes it is cut, as if an incumbent had that makespan. A
  // search that ends without a schedule at most the target (status kUnknown, no schedule) has
  // proven every schedule longer: its bound is then the target (or more). One that finds one
  // goes on as usual, and proves it optimal when it ends. Infinity: none.
  double target = std::numeric_limits<double>::infinity();
  // Every makespan is a whole multiple of this many ms (model/time_quantum.h): a node is cut
  // half of it below the incumbent, and the bounds proven are rounded up to it. < 0: the
  // instance's own (time_quantum()); 0: none, every bound as computed (the tests' reference).
  double quantum = -1;
  // Every node cut by its bound goes here instead of being dropped (cut_frontier.h; null: dropped),
  // and, once the search is over, every node left open: TreeSearch::raise_target starts from
  // them. A search that keeps them cannot resume().
  CutFrontier* keep_cut = nullptr;
  // false: the root only (its bound, and the best warm start as the result), no node expanded;
  // for instances where the tree cannot help in the time there is (solve/solve_pipeline.h).
  bool tree = true;
  // The single-stage relaxation (bounds/single_stage_relaxation.h): at the root, and, when
  // something can offload, at every node from each stage's own history, memoised, for the
  // stages whose relaxation finished at the root (false: off, for comparisons).
  bool stage_relaxation = true;
  // The device relaxation (bounds/device_relaxation.h) at the root, for each device that holds
  // several stages none of which can offload, under memory pressure (false: off, for comparisons).
  bool device_relaxation = true;
  // ... and a second pass of the best device's with the pair releases, for its bound
  // (bounds/device_relaxation.h; false: not, for comparisons).
  bool device_pairs = true;
  // ... with the first stage under the spec's start rules (StartRules::kSpecFirstStage) at the
  // root and from its history (false: the free model for every stage, for comparisons).
  bool spec_start_rules = true;
  // ... and, at the root, with the pair releases (bounds/pair_releases.h: B(s, j) and
  // B(s, j+1) wait for the later devices to run both microbatches; false: each B's own chain).
  // Not at the nodes: there the extra branching cost more than it cut on random offload
  // instances (bench/README.md).
  bool pair_releases = true;
  // Leave the node bound's memory energy part out where it has not raised the bound for a while,
  // computing it at one node in 16 (search/energy_sampling.h; false: at every node, for
  // comparisons).
  bool energy_sampling = true;
  // The root's single-stage relaxation, computed already (root_lower_bound with these options
  // and a cutoff no better than this solve's first incumbent, e.g. before the local search): its
  // bound and its finished stages are used instead of searching again. Null, or one whose
  // relaxation did not run: computed here. Likewise its device relaxation.
  const RootBound* root_relaxation = nullptr;
  // Search nodes of the root's single-stage relaxation per stage (and as many for its search
  // with the last tails); < 0: the default, 200,000 (stage_relaxations.h). A small budget gives
  // a brief bound: the stages whose search finishes within it (solve_pipeline.h).
  std::int64_t root_relaxation_nodes = -1;
  std::function<void(double seconds, double before, double after, int improvements)> on_lns;  // after it
  // The memo of the nodes' device relaxations (relaxation_memo.h) to use instead of the search's
  // own, e.g. one kept across probing's searches (bound_probing.h): its entries are bounds on a
  // node's relaxation, true under any cutoff. Only for searches with the same root relaxation
  // (root_relaxation: the same device). Null: the search's own.
  MonotoneMemo* device_memo = nullptr;
  // A primal search (e.g. a local search) to run on one of the tree's threads, from the start of
  // the tree, with two threads or more: what it offers cuts the tree at once; when it returns
  // before the tree is over, its thread joins the tree. The small instances' first tree
  // (solve/solve_pipeline.cc) runs the local search from the device relaxation's guided start this
  // way, and the mid-size instances' tree the local search in rounds. Null: every thread runs the
  // tree. Like a time limit, it makes which schedule is found when depend on timing.
  std::function<void(const BesideTree&)> beside;
};

struct SolveResult {
  enum class Status { kOptimal, kFeasible, kInfeasible, kUnknown };
  Status status = Status::kUnknown;
  std::optional<Schedule> schedule;  // the best schedule found (with makespan, bubble, peaks, status, bound, gap)
  double makespan = std::numeric_limits<double>::infinity();
  double bound = 0;                  // proven lower bound (= makespan when optimal)
  double gap = std::numeric_limits<double>::infinity();
  double root_bound = 0;
  std::string warm_start;            // which warm start was best ("" if none)
  double warm_start_makespan = std::numeric_limits<double>::infinity();
  std::string reason;                // kInfeasible: why; otherwise why the search stopped
  SolveStats stats;
};

const char* to_string(SolveResult::Status status);

// Solves `instance`. `warm_starts` (e.g. heuristic schedules; invalid or infeasible ones are
// ignored) give the first incumbent. Thread-safe for distinct calls.
SolveResult solve(const Instance& instance, const std::vector<Schedule>& warm_starts = {},
                  const SolveOptions& options = {});

// solve() in parts: a search that stopped at its time or node limit can go on later from where
// it stopped, with its open nodes, transposition table and relaxation memos, instead of starting
// again from the root. `optpipe solve` runs a short tree first on small instances, then a local
// search, then the tree again (solve/solve_pipeline.cc): the second part no longer expands again
// what the first did (bench/README.md, "Small instances against CP-SAT").
struct ResumeOptions {
  double time_limit = std::numeric_limits<double>::infinity();  // seconds, from the resume on
  std::int64_t node_limit = -1;  // nodes expanded in this part (< 0: none)
  double gap = 0.0;              // as SolveOptions::gap
  double known_bound = 0.0;      // as SolveOptions::known_bound (a bound proven meanwhile)
  std::function<void(const SolveProgress&)> on_progress;
};

// A next part's limits as `options` give them (time, nodes, gap, known bound, progress).
ResumeOptions part_limits(const SolveOptions& options);

class TreeSearch {
 public:
  TreeSearch(const Instance& instance, const SolveOptions& options);
  ~TreeSearch();
  TreeSearch(const TreeSearch&) = delete;
  TreeSearch& operator=(const TreeSearch&) = delete;

  // The first part: solve(instance, warm_starts, options).
  SolveResult run(const std::vector<Schedule>& warm_starts = {});
  // Whether the last part stopped at its time or node limit with open nodes left (not proven,
  // not infeasible, not interrupted, not at its gap): then resume() can go on.
  bool resumable() const;
  // The next part, from the open nodes left: `warm_starts` are offered first (a better one cuts
  // open nodes, as the monitor drops them), then the search runs under `limits` instead of the
  // first part's limits; with the first part's options otherwise, but nothing beside the tree
  // (SolveOptions::beside) and no large neighbourhood search. The result's statistics, seconds and
  // warm start are this part's (its root bound the first part's); status, schedule and bound the
  // whole search's. Only when resumable() (else std::logic_error).
  SolveResult resume(const std::vector<Schedule>& warm_starts, const ResumeOptions& limits);
  // Whether the last part kept every node it cut or left open (SolveOptions::keep_cut, complete)
  // and found no schedule at most its target: then raise_target() can go on.
  bool retargetable() const;
  // The next part with a higher target (SolveOptions::target): from the nodes the last part
  // kept (cut_frontier.h says why that is exact), with its transposition table and memos,
  // under `limits`; the nodes still at or above the new cutoff stay kept. Bound probing's next
  // target (bound_probing.h) no longer expands again what the search below the last one did.
  // Only when retargetable() and `target` is above the last one (else std::logic_error).
  SolveResult raise_target(double target, const ResumeOptions& limits);
  // Whether the last part kept every node it cut or left open (SolveOptions::keep_cut, complete),
  // found a schedule at most its target and stopped at its time or node limit before proving it:
  // then resume_from_frontier() can go on (bound_probing.h, ProbingSearch).
  bool resumable_from_frontier() const;
  // The next part without a target, from the nodes the last part kept: those below the cutoff of
  // the incumbent (after `warm_starts`) go back to the pool, the others are cut by it; the
  // transposition table and the memos as the last part left them; nothing is kept any more. As
  // resume() otherwise. Only when resumable_from_frontier() (else std::logic_error).
  SolveResult resume_from_frontier(const std::vector<Schedule>& warm_starts, const ResumeOptions& limits);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// The root bound solve() would report with an incumbent of makespan `incumbent` and these
// options (the node bounds at the root and the single-stage relaxation with that cutoff, within
// its share of options.time_limit), without searching: a value within the relaxation's
// tolerance of the incumbent comes back as the incumbent (proven optimal); 0 when nothing fits.
// `optpipe solve` computes it before the local search of the warm starts, which stops when it
// reaches it, and passes it on as known_bound; `order` guides one more local search run
// (heuristics/warm_starts.h).
struct RootBound {
  double bound = 0;
  // The single-stage relaxation's part: whether it ran, its bound (0: none), and the stages
  // whose relaxation finished (the nodes use those; SolveOptions::root_relaxation).
  bool relaxation_ran = false;
  double relaxation = 0;
  std::vector<int> relaxed_stages;
  double relaxation_seconds = 0;           // what it took
  std::int64_t relaxation_nodes = 0;
  std::int64_t relaxation_tail_searches = 0, relaxation_tail_raised = 0;  // SolveStats::last_tail_*
  std::vector<int> relaxed_tail_stages;    // of relaxed_stages, those asked with the last tails
  // The list of the device of the stage whose single-stage relaxation gave the largest value,
  // in the order of that relaxation's optimum (SingleStageRelaxation::order); device -1 and
  // empty when none gave one below the incumbent.
  int device = -1;
  std::vector<Action> order;
  // The device relaxation's part (bounds/device_relaxation.h): whether it ran, its bound (0:
  // none finished) and its device (-1: none), which the nodes use (SolveOptions::root_relaxation).
  bool device_relaxation_ran = false;
  double device_relaxation = 0;
  int relaxed_device = -1;
  std::vector<Action> device_order;
  double device_pairs_raised = 0;  // what its second pass, with the pair releases, added (0: nothing)
  std::int64_t device_relaxation_nodes = 0;  // its searches' nodes, all devices and both passes
};
RootBound root_lower_bound(const Instance& instance, double incumbent, const SolveOptions& options = {});


}  // namespace optpipe
