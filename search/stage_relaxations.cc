#include "search/stage_relaxations.h"

#include <algorithm>
#include <chrono>

#include "bounds/last_tails.h"
#include "model/simulator.h"

namespace optpipe {

namespace {

// Search nodes of the single-stage relaxation per stage at the root, per call at a node
// (of_history), and the most histories its memo keeps (up to about 1 KB each with 8
// microbatches, so at most a few hundred MB; a search makes a few thousand calls a minute on
// offload-slow-pcie-4x8).
constexpr std::int64_t kSingleStageNodes = 200000;
// More microbatches than this and the root does not try (stage_relaxations.h).
constexpr int kRootMaxMicrobatches = 16;
constexpr std::int64_t kRelaxationNodes = 20000;
constexpr std::size_t kRelaxationMemo = 1 << 18;
// at_node: search nodes per call, and the memo's budget. A call that hits its limit leaves
// nothing to remember, so the next node with the same key asks again: a small limit wastes more
// than it saves. The offload-slow-pcie-4x8 proof (1 thread, the same tree): 1500 nodes a call,
// no proof in 90 s (51k calls unfinished); 3000, 31.8 s (3.2k unfinished); 12000, 17.6 s;
// 30000, 16.6 s (3 unfinished).
constexpr std::int64_t kNodeRelaxationNodes = 30000;
constexpr std::size_t kNodeMemoBytes = std::size_t{128} << 20;
// The searches' budget at the nodes (stage_relaxations.h).
constexpr std::int64_t kNodeBudgetBase = 1'000'000;
constexpr std::int64_t kNodeBudgetPerNode = 100;
// The root's search with the last tails gets this many times the plain search's nodes.
constexpr std::int64_t kTailSearchFactor = 4;

}  // namespace

double lift_to_cutoff(double v, double cut) { return v >= cut - kRelaxationTolerance ? std::max(v, cut) : v; }

StageRelaxations::StageRelaxations(const Instance& instance, const BoundProblem& problem, const SolveOptions& options)
    : inst_(instance),
      problem_(problem),
      opt_(options),
      history_memo_(kRelaxationMemo),
      node_memo_(kRelaxationMemo, kNodeMemoBytes) {}

bool StageRelaxations::within_budget(std::int64_t tree_nodes, SolveStats& stats) const {
  if (spent_.load(std::memory_order_relaxed) <= kNodeBudgetBase + kNodeBudgetPerNode * tree_nodes) return true;
  ++stats.relaxation_over_budget;
  return false;
}

StartRules StageRelaxations::rules_for(int s) const {
  return opt_.spec_start_rules ? strongest_start_rules(inst_, problem_, s) : StartRules::kFree;
}

double StageRelaxations::at_root(const std::vector<double>& head, double cutoff, double known, SolveStats& stats) {
  // Nothing to gain where the cheap bounds or a bound proven elsewhere already meet the cutoff.
  if (opt_.neighbourhood || !opt_.stage_relaxation || known >= cutoff - kTimeEps) return 0.0;
  if (problem_.m > kRootMaxMicrobatches) return 0.0;  // it would not finish: its share of the time goes elsewhere
  ran_ = true;
  if (const RootBound* given = opt_.root_relaxation; given && given->relaxation_ran) {
    // Computed before (root_lower_bound): valid for any cutoff, and its finished stages are the
    // ones that finish here.
    stages_ = given->relaxed_stages;
    tail_stages_ = given->relaxed_tail_stages;
    stats.single_stage_seconds = given->relaxation_seconds;
    stats.single_stage_root_nodes = given->relaxation_nodes;
    stats.last_tail_searches = given->relaxation_tail_searches;
    stats.last_tail_raised = given->relaxation_tail_raised;
    stats.single_stage_bound = lift_to_cutoff(given->relaxation, cutoff);
    return stats.single_stage_bound;
  }
  const double budget = std::min(2.0, 0.05 * opt_.time_limit);
  const std::int64_t nodes = opt_.root_relaxation_nodes >= 0 ? opt_.root_relaxation_nodes : kSingleStageNodes;
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  double best = 0.0;
  auto stopped = [&] { return opt_.stop && opt_.stop->load(); };
  for (int s = 0; s < problem_.S && elapsed() < budget && !stopped(); ++s) {
    // The first stage under the spec's start rules where they apply (stronger, and its search
    // is no larger on offload-slow-pcie-4x8: 68k nodes against 99k).
    // Each stops at its first relaxed schedule at or below what the other bounds know.
    SingleStageRelaxation r = single_stage_relaxation(inst_, problem_, s, head, cutoff, nodes,
                                                      budget - elapsed(), true, rules_for(s), opt_.pair_releases,
                                                      known, opt_.stop);
    stats.single_stage_nodes += r.nodes;
    stats.single_stage_root_nodes += r.nodes;
    if (!r.finished) continue;
    // Then with the last tails (last_tails.h), whose search is harder: at most kTailSearchFactor
    // times the plain one's nodes (and 10k more), stopping where it meets the plain value.
    if ((r.exact || r.below_floor) && !last_tail_choices(problem_, s).empty()) {
      const double plain = r.below_floor ? known : r.bound;
      const std::int64_t limit = std::min(nodes, kTailSearchFactor * r.nodes + 10'000);
      const SingleStageRelaxation t =
          single_stage_relaxation(inst_, problem_, s, head, cutoff, limit, budget - elapsed(), true, rules_for(s),
                                  opt_.pair_releases, std::max(known, plain), opt_.stop, true);
      stats.single_stage_nodes += t.nodes;
      stats.single_stage_root_nodes += t.nodes;
      ++stats.last_tail_searches;
      const bool affordable = t.finished;
      if (t.finished && !t.below_floor && t.bound > plain + kTimeEps) {
        ++stats.last_tail_raised;
        r = t;
      }
      if (affordable && inst_.can_offload()) tail_stages_.push_back(s);
    }
    // A stage stopped below the floor (bound 0) goes on like any finished one: the floor at the
    // root says nothing of the nodes, where the history can raise the stage's value
    // (offload-random-02 of bench/solvers/random_offload.py, one thread, 5 s: bound 55.85 asking
    // it there, 55.64 not), and its relaxed schedule guides the warm starts when no stage gives
    // a better one.
    if (!r.order.empty() && (root_order_.empty() || r.bound > best)) {
      root_order_ = r.order;
      root_order_stage_ = s;
    }
    if (!r.below_floor) best = std::max(best, lift_to_cutoff(r.bound, cutoff));  // it claims nothing
    if (inst_.can_offload()) stages_.push_back(s);
  }
  stats.single_stage_bound = best;
  stats.single_stage_seconds = elapsed();
  return best;
}

double StageRelaxations::of_history(const NodeTimes& times, const NodeTransfers& transfers, double cut,
                                    std::int64_t tree_nodes, SolveStats& stats) {
  double best = 0;
  // Asked a little above the cutoff: the relaxation returns its value less a hair.
  const double ask = cut + kRelaxationTolerance;
  for (int s : stages_) {
    std::vector<double> key = single_stage_history_key(inst_, problem_, s, times, transfers);
    key.push_back(static_cast<double>(s));
    if (const std::optional<double> v = history_memo_.find(key)) {
      ++stats.relaxation_hits;
      best = std::max(best, lift_to_cutoff(*v, cut));
      if (best >= cut) return best;
      continue;
    }
    if (!within_budget(tree_nodes, stats)) continue;
    // The first stage under the spec's own start rules: stronger, and still a bound for every
    // node with the history (single_stage_relaxation.h).
    const StartRules rules = rules_for(s);
    const SingleStageRelaxation r =
        single_stage_relaxation_of_history(inst_, problem_, s, times, transfers, ask, kRelaxationNodes, rules, false,
                                           tails_for(s));
    spend(r.nodes, stats);
    ++stats.relaxation_calls;
    if (rules == StartRules::kSpecFirstStage) ++stats.spec_rule_calls;
    if (!r.finished) ++stats.relaxation_unfinished;
    const double v = r.finished ? r.bound : 0.0;
    history_memo_.insert(std::move(key), v);
    best = std::max(best, lift_to_cutoff(v, cut));
    if (best >= cut) return best;
  }
  return best;
}

double StageRelaxations::at_node(const NodeTimes& times, const NodeTransfers& transfers,
                                 const std::vector<double>& head, double cut, std::int64_t tree_nodes,
                                 SolveStats& stats) {
  double best = 0;
  const double ask = cut + kRelaxationTolerance;  // as in of_history
  for (int s : stages_) {
    std::vector<double> key = single_stage_node_key(inst_, problem_, s, times, transfers);
    key.push_back(static_cast<double>(s));
    std::vector<double> params = single_stage_node_params(inst_, problem_, s, times, transfers, head);
    const MonotoneMemo::Answer known = node_memo_.find(key, params, cut);
    if (known.known > 0 || known.hopeless) {
      ++stats.node_relaxation_hits;
      best = std::max(best, lift_to_cutoff(known.known, cut));
      if (best >= cut) return best;
      if (known.hopeless) continue;
    }
    if (!within_budget(tree_nodes, stats)) continue;
    const SingleStageRelaxation r =
        single_stage_relaxation_at_node(inst_, problem_, s, times, transfers, head, ask, kNodeRelaxationNodes, false,
                                        tails_for(s));
    spend(r.nodes, stats);
    ++stats.node_relaxation_calls;
    if (!r.finished) {
      ++stats.relaxation_unfinished;
      continue;
    }
    node_memo_.insert(std::move(key), std::move(params), r.bound, r.exact);
    best = std::max(best, lift_to_cutoff(r.bound, cut));
    if (best >= cut) return best;
  }
  return best;
}

}  // namespace optpipe
