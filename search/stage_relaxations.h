// The single-stage relaxations as the branch-and-bound uses them (solver.h): once at the root,
// and at the nodes from each stage's history and from the node's own heads, answered from memos
// where they can be (relaxation_memo.h). The relaxation itself is bounds/single_stage_relaxation.h.
//
// At the root it gets a small share of the time limit (5%, at most 2 s, over all stages) and
// 200,000 search nodes a stage (fewer with SolveOptions::root_relaxation_nodes: the brief bound
// of solve/solve_pipeline.cc, before the quick local search), and
// only up to 16 microbatches: with 24 to 64 (the generated families: GPT-3 1.5B-14.6B and
// Llama-2 7B on 8-16 GPUs at 1.5-4 activations, gpt-8x24-tight) no stage ever finished in that
// share, nor in 5M nodes and 20 s on paper-gpt3-6.2b-8x24-3act, and at scale, where the local
// search runs in rounds after it, both cores waited for it (1.3 s of a 30 s run); with 16 some
// stages finish (Llama-2 7B 4 x 16 at 1.5 activations is proven by it). The
// stages whose search finished there are the ones the nodes ask (a stage too big at the root
// would cost every node its whole node limit), and only where offloads make the tree hard. The
// first stage follows the spec's start rules where they apply (SolveOptions::spec_start_rules).
// Each stage whose search finished is searched again with the last three microbatches' tails
// (bounds/last_tails.h), with at most kTailSearchFactor = 4 times its nodes (and 10k more),
// stopping at a relaxed schedule no higher than the plain value; the larger value counts, and
// the nodes ask with the last tails exactly the stages where that search finished (with them
// the search gets harder where the value rises: with 10 microbatches on the 6-GPU instance
// below, stages 1 and 2 did not finish in 2M nodes, 608k and 80k without). offload-random-10
// and offload-random-18 of bench/solvers/random_offload.py are proven at the root by it
// (bench/README.md, "Last tails").
//
// A single-stage relaxation is exact only up to its search's time tolerances (1e-9 ms a step, at
// most a few 1e-7 ms in all), so it returns its value less 1e-7 ms. A value within
// kRelaxationTolerance of the cutoff counts as reaching it: without that, a node whose
// relaxation equals the incumbent exactly (as along an optimal schedule's path) could never be
// cut by it. So a proof that rests on it holds up to 1e-6 ms, like a MILP solver's absolute gap
// tolerance.
//
// The searches at the nodes share a budget: at most kNodeBudgetBase search nodes, plus
// kNodeBudgetPerNode for each node the tree has expanded (`tree_nodes`); past it a stage is
// answered from the memos only. On the random offload instances of
// bench/solvers/random_offload.py they spend 1-70 search nodes per tree node and cut many of
// them; on a 6 x 12-microbatch instance with offload (`optpipe generate --model gpt3-14.6b
// --devices 6 --microbatches 12 --memory-limit 4act`) 14,000, a third of them unfinished, and
// the tree ran 60-80 nodes a second without a better bound to show for it.
//
// Thread safety: the root part runs before the workers start; of_history() and at_node() may be
// called by every worker at once (the memos lock; the budget's count is a relaxed atomic, so with
// several threads which searches it skips depends on timing; everything else they read is
// read-only then).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <vector>

#include "bounds/bound_problem.h"
#include "bounds/node_times.h"
#include "bounds/node_transfers.h"
#include "bounds/single_stage_relaxation.h"
#include "model/action.h"
#include "model/instance.h"
#include "search/relaxation_memo.h"
#include "search/search_shared.h"
#include "search/search_stats.h"
#include "search/solver.h"

namespace optpipe {

// v, or `cut` where v is within kRelaxationTolerance of it.
double lift_to_cutoff(double v, double cut);

class StageRelaxations {
 public:
  StageRelaxations(const Instance& instance, const BoundProblem& problem, const SolveOptions& options);

  // The largest single-stage relaxation bound at the root over the stages it applies to, with
  // the root's heads `head` and cutoff `cutoff`; 0 when none applies, none finishes within its
  // budget, or `known` (the root's cheap bounds, or a bound proven elsewhere) already meets the
  // cutoff. Records the stages the nodes will ask and the relaxed order of the best one.
  double at_root(const std::vector<double>& head, double cutoff, double known, SolveStats& stats);
  bool ran() const { return ran_; }  // at_root got past its early return
  const std::vector<int>& stages() const { return stages_; }
  // Of those, the stages whose root search with the last tails finished within its budget: the
  // nodes ask them with the last tails too.
  const std::vector<int>& tail_stages() const { return tail_stages_; }
  bool active() const { return !stages_.empty(); }
  // The order of the largest exact root relaxation's optimum, and its stage (-1: none).
  const std::vector<Action>& root_order() const { return root_order_; }
  int root_order_stage() const { return root_order_stage_; }

  // The largest relaxation of the node's stage histories (`times`, `transfers`, after its
  // bound), each from the memo when a node with the same history asked before; stops at the
  // first that reaches `cutoff`. An unfinished search counts as 0 and is not tried again.
  double of_history(const NodeTimes& times, const NodeTransfers& transfers, double cutoff, std::int64_t tree_nodes,
                    SolveStats& stats);
  // The largest relaxation with the node's own heads, free times and makespan so far (stronger
  // than the history's, but no two nodes ask the same question), from the monotone memo where
  // it can.
  double at_node(const NodeTimes& times, const NodeTransfers& transfers, const std::vector<double>& head,
                 double cutoff, std::int64_t tree_nodes, SolveStats& stats);

 private:
  StartRules rules_for(int s) const;
  bool tails_for(int s) const { return std::find(tail_stages_.begin(), tail_stages_.end(), s) != tail_stages_.end(); }
  // Whether the searches at the nodes are within their budget (above), counting when not.
  bool within_budget(std::int64_t tree_nodes, SolveStats& stats) const;
  // Counts a search at a node: its nodes against the budget and in the statistics.
  void spend(std::int64_t nodes, SolveStats& stats) {
    spent_.fetch_add(nodes, std::memory_order_relaxed);
    stats.single_stage_nodes += nodes;
    stats.relaxation_search_nodes += nodes;
  }

  const Instance& inst_;
  const BoundProblem& problem_;
  const SolveOptions& opt_;
  bool ran_ = false;
  std::vector<int> stages_, tail_stages_;
  std::vector<Action> root_order_;
  int root_order_stage_ = -1;
  HistoryMemo history_memo_;
  MonotoneMemo node_memo_;
  std::atomic<std::int64_t> spent_{0};  // search nodes of the searches at the nodes
};

}  // namespace optpipe
