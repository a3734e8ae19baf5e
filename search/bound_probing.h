// Probing: the tree search (solver.h) asked for a schedule of makespan at most a target just
// above the proven bound, the target raised step by step while the answer is "none".
//
// Source: destructive improvement (R. Klein, A. Scholl, "Computing lower bounds by destructive
// improvement: an application to resource-constrained project scheduling", EJOR 112(2), 1999:
// test trial makespans by trying to show that none is feasible; each one refuted is a lower
// bound), run as iterative deepening on the cost threshold (R. E. Korf, "Depth-first
// iterative-deepening: an optimal admissible tree search", Artificial Intelligence 27, 1985).
//
// Why. On the small V and loop instances (bench/solvers/random_small.py) the root bound is the
// optimum or within 0.5% of it, yet the tree with the heuristics' incumbents (3-5% above) finds
// the optimum only after 100k+ nodes, and then proves it at once: it explores every node whose
// bound lies between the two. With a target (SolveOptions::target) every node whose bound
// passes it is cut, and close to the proven bound the device relaxation cuts near the root too
// (node_expansion.h): seed-13 small-v-02 (bound 43.94, optimum 44.00) is refuted at 43.984 in
// 7.0k nodes and solved at 44.094 in 9.7k more (two threads, 0.63 s), where the tree from the
// heuristics' incumbent takes 127k. Where no device relaxation applies the targets cut the tree
// all the same (seed-1 small-loop-00: its optimum found and proven in 33k nodes, the tree from
// the incumbent 65k), so the solver probes on every small instance without offload.
//
// The targets: T = B·(1 + r) + a hair, B the bound proven so far, r = 0.1%, 0.25%, 0.5%, and 1%
// from then on (ProbingOptions::widest_step; every target is then within the device
// relaxation's close range near a proof, 2%: kCloseGap in node_expansion.cc); a target refuted in fewer
// than 1000 nodes skips the next step, one refuted only after a long search sends the next back
// to 0.1% (ProbingOptions::long_refutation). Not r = 0: where the device
// relaxation's optimum is the target, each of its searches at the nodes has to find that
// optimum to answer that it cannot cut (small-v-02, one thread: 1.47 s at its bound, 43.770001,
// and 0.44 s at 43.814). A target refuted (the search below it exhausted) becomes the
// bound; a schedule at most the target ends the probing: its search goes on with that schedule
// as the incumbent and proves it optimal when it ends. Probing stops, keeping the bound it
// proved, when a search stops at the node or time budget, or when the next target would reach
// the incumbent (`upper`); past a refutation, the last target is then just below the
// incumbent, so that the frontier kept (below) proves it optimal. A target searched once
// another was refuted may run past the limits (ProbingOptions::grace).
//
// One search for all the targets: each target's search after a refutation goes on from the
// nodes the last one cut by its bound (with its transposition table: TreeSearch::raise_target,
// cut_frontier.h), where a search from the root expanded again every node below the refuted
// target, which its own proof needs as well. Random V/loop instances, two threads, the solve
// from process start: seed-1 small-loop-03 2.6-2.8 s -> 1.0-1.1 s, seed-29 loop-04 5.8-6.1 ->
// 4.2-4.4 s, seed-17 v-02 2.4-2.8 -> 1.9 s, seed-13 loop-04 1.3-1.4 -> 1.0 s (bench/README.md).
// Step counts are then this part's nodes, so more refutations count as quick and skip a step.
//
// Complexity: the nodes whose bound is at most the last target, each expanded once (up to
// ProbingOptions::frontier_bytes of kept nodes, past which a target's search starts from the
// root again); with steps of at most 1% of the bound, at most log(upper / B) / log(1.01) + 4
// targets.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "model/instance.h"
#include "bounds/two_device_relaxation.h"
#include "search/cut_frontier.h"
#include "search/relaxation_memo.h"
#include "search/solver.h"

namespace optpipe {

struct ProbingOptions {
  SolveOptions search;  // each target's search (its target, known bound and limits are set here)
  double bound = 0;     // proven lower bound to start from (e.g. the root's)
  double upper = std::numeric_limits<double>::infinity();  // the incumbent's makespan
  std::int64_t node_limit = 200000;                        // nodes, all targets together
  double time_limit = std::numeric_limits<double>::infinity();  // seconds, all together
  // Once a target has been refuted (the probing converges), the limits above are `grace` times
  // as large: the last target's search, which finds the optimum and proves it, is the longest.
  // Where it stops short, the solver's next phases cost more than it lacked (random_small.py:
  // seed-17 small-v-02's last target needed 2.4 s of a 2 s budget, and stopped there the solve
  // took 6.2-8.4 s; seed-1 loop-03 5.6-6.6 s, 2.5-3.8 s with a grace of 2). A probe that refuted
  // nothing keeps the limits (small-loop-03: its first target stops undecided).
  double grace = 1;
  // A target refuted in at least this many nodes sends the next one back to the first step
  // (0.1% above the new bound) instead of a wider one: seed-29 small-loop-04 of random_small.py
  // refutes 0.99% above its bound in 118k nodes, its optimum lies 0.04% above that, and the 2%
  // step found it in 186k nodes where 0.1% takes 126k (the solve 5.5-6.2 -> 4.4-4.6 s).
  std::int64_t long_refutation = 50000;
  // Each target's search after a refutation starts from the nodes the last one cut by its bound
  // (search/cut_frontier.h), not from the root: the part below the refuted target is settled,
  // and the next search would expand all of it again (its proof covers every node below the
  // old target too). Up to this many bytes of kept nodes; past them the next search starts
  // from the root. 0: always from the root (the reference the tests compare against).
  std::size_t frontier_bytes = std::size_t{128} << 20;
  // Before the first target, the two-device relaxations (bounds/two_device_relaxation.h), asked
  // for targets above `bound` up to the incumbent, within this many nodes in all (0: none): the
  // targets here start from the best they refuted.
  std::int64_t two_device_nodes = 0;
  // The widest step, as an index into bounds/target_steps.h's steps: 3, 1% (4: 2%). Since each
  // target's search goes on from the last one's cut nodes, the narrower steps cost little, and a
  // target far above the optimum makes the search that finds it explore every node up to it
  // first. The 16 slowest V and loop instances of random_small.py, one thread: 716k -> 652k nodes
  // (seed-17 small-v-02 57k -> 38k, seed-1 small-loop-00 78k -> 56k, loop-03 64k -> 44k); the
  // other 93 V and loop instances 36.3k -> 34.4k, none more than a few dozen up. With two
  // threads, interleaved, wall time 5.92 -> 5.68 s and 1.76 -> 1.71 s (bench/README.md). With 0.5%
  // as the widest: 659k, but seed-29 small-loop-04 290k instead of 263k.
  std::size_t widest_step = 3;
};

struct ProbeStep {
  double target = 0;
  bool found = false;     // a schedule at most the target (the last step)
  bool refuted = false;   // none: the bound is now the target
  // The target is just below the incumbent (ProbingOptions::upper): refuted, it is optimal.
  bool below_incumbent = false;
  std::int64_t nodes = 0;
  std::int64_t relaxation_nodes = 0;  // the device relaxations' search nodes at its nodes
  double seconds = 0;
};

struct ProbingResult {
  // The search of the target that found a schedule (its status says whether it proved it
  // optimal); empty when none did.
  std::optional<SolveResult> found;
  bool proven = false;  // the schedule found is proven optimal
  double makespan = std::numeric_limits<double>::infinity();  // the schedule found (infinity: none)
  double start = 0;  // the bound it started from (ProbingOptions::bound, or the two devices')
  // The two-device relaxations before the targets (ProbingOptions::two_device_nodes).
  TwoDeviceBound two_device;
  double two_device_seconds = 0;
  double bound = 0;  // proven: no schedule is shorter
  std::vector<ProbeStep> steps;
  std::int64_t nodes = 0;
  double seconds = 0;
};

// The last target's search where it found a schedule but a limit stopped it before its proof
// (TreeSearch::resumable_from_frontier), with the memo and the frontier it reads (they live as
// long as it): a solver goes on from there (TreeSearch::resume_from_frontier) instead of
// starting again from the root. Seed-11 small-loop-03 of bench/solvers/random_small.py with
// `optpipe solve --time-limit 10`: probing's last target found 42.37 ms after 141k nodes when its
// 4 s ran out, and the tree after the local search, from the root, took 125k more nodes (3.5 s)
// to prove 42.30 ms (bench/README.md).
struct ProbingSearch {
  std::unique_ptr<MonotoneMemo> memo;
  std::unique_ptr<CutFrontier> cut;
  std::unique_ptr<TreeSearch> search;  // (declared last: destroyed first)
};

// `keep` (null: none) receives the last target's search where it found a schedule and can go on
// (ProbingSearch); it is left as it was otherwise.
ProbingResult probe_targets(const Instance& instance, const ProbingOptions& options, ProbingSearch* keep = nullptr);

}  // namespace optpipe
