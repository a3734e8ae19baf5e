#include "search/node_expansion.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "bounds/device_relaxation.h"
#include "bounds/heads.h"
#include "search/candidates.h"

namespace optpipe {

namespace {
// A device relaxation at a node stops here unfinished (worth 0): it is asked at every child
// that survives the node bound (from 3/8 of the decisions on, bound_child).
constexpr std::int64_t kDeviceNodeLimit = 2000;
// ... and near a proof, where the cutoff is within kCloseGap of the proven bound, from 1/16 of
// the decisions on, with this limit (bound_child). A child of a node whose relaxation stopped at
// its limit undecided is not asked unless its decision is on the relaxed device (bound_child).
constexpr double kCloseGap = 0.02;
constexpr std::int64_t kCloseDeviceNodeLimit = 20000;
// A worker keeps the orders of this many relaxed schedules below the cutoff that its device
// relaxations met (the most recent, or the last to answer, first), and a node's question tries
// them, re-timed, before searching (SearchWorker::device_witnesses). The 16 slowest V and loop
// instances of random_small.py, probing from their optimum on one thread (bench/probing_work):
// the same tree nodes, 8.31M -> 5.38M relaxation nodes at them; instructions (callgrind) seed-1
// small-loop-03 4.47G -> 3.80G, seed-7 v-06 8.86G -> 5.96G, seed-17 v-02 6.32G -> 5.87G. With
// the last 1, 4, 16 or 256 orders: 6.97M, 6.42M, 5.83M, 5.32M relaxation nodes.
constexpr std::size_t kDeviceWitnesses = 64;
// The devices other than the root's best: asked after it where it does not cut, except that once
// one has been asked kOtherDeviceTrial times and cut fewer than kOtherDeviceCutRate of them, only
// every kOtherDeviceEvery-th time (so that its rate can still rise: near the root, where probing's
// first targets are searched, few answers cut). Every device's relaxation at the nodes was tried
// before the witnesses and cost more time than it saved (bench/README.md); with them, the 109 V
// and loop instances of random_small.py's seven seeds, one thread, CPU time (min of 3 runs):
// 9.34 s (the root's device alone) -> 7.92 s (seed-29 small-loop-04 2.94 -> 2.22 s, its probing
// 199k -> 122k nodes; seed-1 loop-03 0.83 -> 0.39 s; seed-11 v-02 0.19 -> 0.09 s). In another
// run 8.84 -> 7.42 s, with a 2% rate 7.52 s; every device at every node, two threads, wall (min
// of 2): 6.35 -> 5.95 s where this rule gave 5.79 s. The rule passes over the devices that never
// cut (seed-13 loop-04's device 2: none of 18k answers).
constexpr std::int64_t kOtherDeviceTrial = 200;
constexpr double kOtherDeviceCutRate = 0.05;
constexpr std::int64_t kOtherDeviceEvery = 16;
}  // namespace

NodeExpander::NodeExpander(const SearchContext& ctx) : ctx_(ctx) {
  if (const Neighbourhood* nb = ctx.opt.neighbourhood) {
    fixed_.resize(ctx.inst.num_devices());
    for (int d = 0; d < ctx.inst.num_devices(); ++d) {
      for (const Action& a : nb->guide.devices[d]) {
        if (!nb->free_microbatch[a.mb]) fixed_[d].push_back(a);
      }
    }
  }
}

Simulator::Step NodeExpander::replay(SearchWorker& w, const SearchNode& n) const {
  w.sim.start_open();
  Simulator::Step step = w.sim.advance();
  for (std::uint32_t x : n.path) {
    w.sim.append(step.device, ctx_.codec.decode(x));
    step = w.sim.advance();
  }
  return step;
}

double NodeExpander::bound(SearchWorker& w, const Simulator::Snapshot& st, double t) const {
  ++w.stats.bound_calls;
  const bool energy = !ctx_.opt.energy_sampling || w.energy.want();
  if (!energy) ++w.stats.memory_energy_skipped;
  const NodeBoundParts parts =
      node_bound(ctx_.problem, st, t, w.bound, ctx_.shared.cutoff(), ctx_.can_offload, energy);
  w.energy.record(parts.memory_energy_ran, parts.best() == BoundPart::kMemoryEnergy);
  switch (parts.best()) {
    case BoundPart::kCriticalPath: ++w.stats.critical_path_best; break;
    case BoundPart::kOneMachine: ++w.stats.one_machine_best; break;
    case BoundPart::kChannel: ++w.stats.channel_best; break;
    case BoundPart::kMemoryEnergy: ++w.stats.memory_best; break;
  }
  return parts.value();
}

double NodeExpander::bound_outside_batch(SearchWorker& w, const Simulator::Snapshot& st, double t) const {
  fill_node_times(ctx_.problem, st, t, w.bound.times);
  fill_node_transfers(ctx_.problem, st, t, w.bound.transfers);
  ++w.stats.bound_calls;
  w.nodes.add(w.bound.times, &w.bound.transfers);
  return w.bound.times.makespan_so_far;
}

void NodeExpander::reach_leaf(SearchWorker& w) const {
  ++w.stats.leaves;
  const double makespan = w.sim.snapshot().makespan;
  if (!(makespan < ctx_.shared.incumbent() - kTimeEps)) return;
  Schedule sch;
  sch.instance = ctx_.inst.name;
  sch.devices = w.sim.snapshot().owned.devices;
  if (ctx_.shared.offer_from_tree(std::move(sch), makespan)) ++w.stats.incumbent_updates;
}

double NodeExpander::device_relaxation(SearchWorker& w, std::int64_t limit) const {
  if (ctx_.relaxed_device < 0) return 0;
  double b = device_relaxation_of(w, ctx_.relaxed_device, limit);
  const bool unfinished = w.relaxation_unfinished;  // the root's device's, which bound_child reads
  DeviceRelaxationTallies* tally = ctx_.device_tallies;
  for (const int d : ctx_.other_relaxed_devices) {
    if (b >= ctx_.shared.cutoff()) break;
    const std::size_t x = static_cast<std::size_t>(d);
    if (tally) {
      const std::int64_t calls = tally->calls[x].load(std::memory_order_relaxed);
      const bool seldom = calls >= kOtherDeviceTrial &&
                          static_cast<double>(tally->cuts[x].load(std::memory_order_relaxed)) <
                              kOtherDeviceCutRate * static_cast<double>(calls);
      if (seldom && (tally->passed[x].fetch_add(1, std::memory_order_relaxed) + 1) % kOtherDeviceEvery != 0) {
        ++w.stats.device_node_passed;
        continue;
      }
    }
    const double c = device_relaxation_of(w, d, limit);
    if (tally) {
      tally->calls[x].fetch_add(1, std::memory_order_relaxed);
      if (c >= ctx_.shared.cutoff()) tally->cuts[x].fetch_add(1, std::memory_order_relaxed);
    }
    b = std::max(b, c);
  }
  w.relaxation_unfinished = unfinished;
  return b;
}

double NodeExpander::device_relaxation_of(SearchWorker& w, int d, std::int64_t limit) const {
  const double cut = ctx_.shared.cutoff();
  // From the memo where a node with the same history on d answered: a cut with params no larger
  // cuts this one too, a relaxed schedule below the cutoff with params no smaller says it cannot.
  const bool memo = ctx_.device_memo != nullptr;
  std::vector<double> key, params;
  if (memo) {
    key = device_relaxation_node_key(ctx_.problem, d, w.bound.times);
    key.push_back(d);  // (one memo for every device)
    params = device_relaxation_node_params(ctx_.problem, d, w.bound.times, w.bound.head);
    const MonotoneMemo::Answer a = ctx_.device_memo->find(key, params, cut);
    if (a.known >= cut - kRelaxationTolerance || a.hopeless) {
      ++w.stats.device_node_hits;
      const double b = lift_to_cutoff(a.known, cut);
      if (b >= cut) ++w.stats.pruned_device;
      return b;
    }
  }
  ++w.stats.device_node_calls;
  if (w.device_witnesses.size() <= static_cast<std::size_t>(d)) w.device_witnesses.resize(static_cast<std::size_t>(d) + 1);
  std::vector<std::vector<Action>>& seen = w.device_witnesses[static_cast<std::size_t>(d)];
  DeviceRelaxation r = device_relaxation_at_node(ctx_.inst, ctx_.problem, d, w.bound.times, w.bound.head, cut, limit,
                                                 ctx_.last_tails, &seen);
  w.stats.device_node_nodes += r.nodes;
  if (r.from_witness) {  // the one that answered goes first
    ++w.stats.device_node_witness;
    std::rotate(seen.begin(), seen.begin() + r.witness_index, seen.begin() + r.witness_index + 1);
  } else if (!r.witness.empty()) {
    seen.insert(seen.begin(), std::move(r.witness));
    if (seen.size() > kDeviceWitnesses) seen.pop_back();
  }
  if (memo && (r.finished || r.upper < cut)) {
    ctx_.device_memo->insert_bounds(std::move(key), std::move(params), r.finished ? r.bound : 0.0, r.upper);
  }
  if (!r.finished) {
    if (!(r.upper < cut)) {  // not even a relaxed schedule below the cutoff
      ++w.stats.device_node_unfinished;
      w.relaxation_unfinished = true;
    }
    return 0;
  }
  const double b = lift_to_cutoff(r.bound, cut);
  if (b >= cut) ++w.stats.pruned_device;
  return b;
}

double NodeExpander::bound_child(SearchWorker& w, const SearchNode& parent, double t, int device) const {
  w.relaxation_unfinished = false;
  const Simulator::Snapshot& st = w.sim.snapshot();
  if (w.batch) return bound_outside_batch(w, st, t);
  const auto t0 = std::chrono::steady_clock::now();
  double b = bound(w, st, t);
  w.stats.bound_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cut = ctx_.shared.cutoff();
  if (b >= cut) return b;
  // The device relaxation from 3/8 of the decisions on: nearer the root each call searches
  // longer and cuts less (random_small.py's V and loop instances, seeds 1, 7, 11, 13, 17; from a
  // quarter on, v-02 took 1.9 s and v-03 0.52 s instead of 1.7 and 0.22 s with two threads).
  // Without it, one thread: small-v-02 5.2 s instead of 3.0 s, seed-17 v-00 and v-02 not proven
  // in 30 s instead of 17.4 and 5.1 s (before the memo below).
  // Near a proof (the cutoff within kCloseGap of the proven bound: an incumbent close to it, or
  // a target, SolveOptions::target) from 1/16 on, with a larger budget: there the relaxation's
  // question is tight, and it cuts near the root too. With its optimum as the incumbent from
  // the start (one thread, `solve()`), seed-13 small-v-02 of bench/solvers/random_small.py is
  // proven in 6.8k nodes instead of 127k, small-v-03 in 236 instead of 12k, seed-13 loop-04 in
  // 22k instead of 124k (bench/README.md, "Probing").
  // Not below a relaxation that stopped at its limit undecided, unless the decision is on the
  // relaxed device: the child's question is its parent's with the other devices' heads a little
  // later, and near a proof (20k nodes a call) it mostly stops undecided again. Its own children
  // ask again. Seed-11 small-loop-03 of bench/solvers/random_small.py: probing's first target,
  // 0.1% above the root bound, stopped after 1.5k nodes in its 4 s, 6.4k calls stopped in a 20 s
  // solve; now that target is refuted in 3k nodes and the solve proves the optimum, 42.30 ms, in
  // 22-24 s (36 s in the one run of 11-29 that proved it before; never in 60 s on 11-28). Where
  // no call stops (the 16 slowest proven V/loop instances) the node counts are the same.
  const std::size_t decisions = static_cast<std::size_t>(ctx_.problem.S) * ctx_.problem.m * ctx_.problem.types;
  const std::size_t depth = parent.path.size() + 1;
  if (parent.relaxation_unfinished && device != ctx_.relaxed_device) {
    ++w.stats.device_node_skipped;  // (its parent's was asked: there is a relaxed device)
  } else if (8 * depth >= 3 * decisions) {
    b = std::max(b, device_relaxation(w, kDeviceNodeLimit));
  } else if (16 * depth >= decisions && cut - ctx_.shared.proven_bound() <= kCloseGap * cut) {
    b = std::max(b, device_relaxation(w, kCloseDeviceNodeLimit));
  }
  if (b >= cut || !ctx_.relaxations.active()) return b;
  b = std::max(b, ctx_.relaxations.of_history(w.bound.times, w.bound.transfers, cut, ctx_.shared.nodes(), w.stats));
  // With the node's own heads only from an eighth of the decisions on: nearer the root they
  // seldom cut, and each costs a search (StageRelaxations::at_node). From a quarter on (before
  // 2026-11-29), offload-random-15 of bench/solvers/random_offload.py --seed 8 took 51.5k nodes
  // to prove its optimum, 46k of them at depths 10-19 of 72, which the relaxation with their
  // heads cuts: now 3.8k (one thread, 1.4 -> 0.6 s of CPU); the other 103 random offload
  // instances of seeds 7, 8 and 9 and the shipped ones expand the same nodes or a few fewer, or
  // end where they did within the time limit (bench/README.md, "The relaxation with the node's
  // heads from an eighth of the decisions").
  const std::size_t from_depth = ctx_.problem.S * ctx_.problem.m * ctx_.problem.types / 8;
  if (b < ctx_.shared.cutoff() && parent.path.size() + 1 >= from_depth) {
    b = std::max(b, ctx_.relaxations.at_node(w.bound.times, w.bound.transfers, w.bound.head, ctx_.shared.cutoff(),
                                             ctx_.shared.nodes(), w.stats));
  }
  if (b >= ctx_.shared.cutoff()) ++w.stats.pruned_relaxation;
  return b;
}

NodePtr NodeExpander::child_node(const SearchNode& n, const Action& a, double bound) const {
  auto child = std::make_unique<SearchNode>();
  child->path.reserve(n.path.size() + 1);
  child->path = n.path;
  child->path.push_back(ctx_.codec.encode(a));
  child->bound = bound;
  child->depth = n.depth + 1;
  return child;
}

void NodeExpander::expand(SearchWorker& w, const SearchNode& n, const Simulator::Step& step,
                          std::vector<NodePtr>& children, std::vector<Action>& actions) const {
  w.parent = w.sim.snapshot();
  // Heads of this node (without its transfers) for candidate ordering and rule 2.
  NodeBoundWork& hw = w.bound;
  fill_node_times(ctx_.problem, w.parent, step.time, hw.times);
  compute_heads(ctx_.problem, hw.times, hw.head, hw.finish);
  branch_candidates(ctx_.inst, ctx_.problem, w.parent, step.device, step.time, hw.head,
                    !ctx_.can_offload && fixed_.empty(), w.candidates, w.candidate_stats);
  if (!fixed_.empty()) keep_neighbourhood(w.parent, step.device, w.candidates);
  for (const Candidate& c : w.candidates) {
    w.sim.restore(w.parent);
    w.sim.append(step.device, c.action);
    const Simulator::Step next = w.sim.advance();
    if (next.kind == Simulator::Step::Kind::kDeadlock) {
      ++w.stats.pruned_deadlock;
      continue;
    }
    if (next.kind == Simulator::Step::Kind::kDone) {
      reach_leaf(w);
      continue;
    }
    if (w.sim.forward_wait_never_ends()) {
      ++w.stats.pruned_deadlock;
      continue;
    }
    // Duplicates first: a node whose twin (or a node dominating it) was generated before has
    // nothing to add, and the table's test costs less than the bound. A node stored here and
    // then cut by its bound still covers its twins: their subtrees are cut by the same bound.
    if (ctx_.tt) {
      build_state_key(ctx_.problem, w.sim.snapshot(), ctx_.can_offload, w.key);
      if (ctx_.tt->dominated_or_insert(w.key)) {
        ++w.stats.pruned_transposition;
        continue;
      }
    }
    const double b = bound_child(w, n, next.time, step.device);
    if (b >= ctx_.shared.cutoff()) {
      ctx_.shared.note_cut(b);
      ++w.stats.pruned_bound;
      if (ctx_.opt.keep_cut) {
        NodePtr cut = child_node(n, c.action, b);
        keep_cut_node(ctx_, cut);
      }
      if (w.batch) w.nodes.pop_back(ctx_.problem);  // forget it: it was cut before the batch ran
      continue;
    }
    NodePtr child = child_node(n, c.action, b);
    child->relaxation_unfinished = w.relaxation_unfinished;
    static constexpr double kTypeRank[] = {3, 0, 1, 2};  // F, B, W, R
    child->priority = c.earliest_start + 1e-6 * kTypeRank[static_cast<int>(c.action.type)];
    children.push_back(std::move(child));
    actions.push_back(c.action);
  }
}

void NodeExpander::keep_neighbourhood(const Simulator::Snapshot& st, int d, std::vector<Candidate>& cands) const {
  const auto& free_mb = ctx_.opt.neighbourhood->free_microbatch;
  std::size_t k = 0;
  for (const Action& a : st.owned.devices[d]) k += free_mb[a.mb] ? 0 : 1;
  const Action* expected = k < fixed_[d].size() ? &fixed_[d][k] : nullptr;
  std::erase_if(cands, [&](const Candidate& c) { return !free_mb[c.action.mb] && !(expected && c.action == *expected); });
}

}  // namespace optpipe
