#include "search/bound_probing.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>

#include "bounds/target_steps.h"
#include "model/simulator.h"
#include "search/relaxation_memo.h"
#include "search/search_shared.h"

namespace optpipe {

namespace {

// A target refuted in fewer nodes than this skips the next step.
constexpr std::int64_t kQuickRefutation = 1000;

}  // namespace

ProbingResult probe_targets(const Instance& instance, const ProbingOptions& options, ProbingSearch* keep) {
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  ProbingResult out;
  out.start = out.bound = options.bound;
  if (!(options.bound > 0)) return out;
  if (options.two_device_nodes > 0 && options.bound < options.upper - kTimeEps) {
    out.two_device = two_device_bound(instance, options.upper, options.two_device_nodes, options.bound);
    out.two_device_seconds = elapsed();
    out.start = out.bound = std::max(out.bound, out.two_device.bound);
  }
  // One memo of the nodes' device relaxations for every target: its entries hold under any cutoff.
  auto memo = std::make_unique<MonotoneMemo>(kDeviceMemoKeys, kDeviceMemoBytes);
  // One search for all targets while it keeps a complete frontier (TreeSearch::raise_target).
  auto cut = std::make_unique<CutFrontier>(options.frontier_bytes);
  std::unique_ptr<TreeSearch> tree;
  bool below_upper = false;  // the last target is below the incumbent (then no step follows)
  for (std::size_t k = 0;; ++k) {
    // (bounds/target_steps.h: the steps and the hair)
    double target = target_above(out.bound, std::min(k, options.widest_step));
    if (target >= options.upper - kTimeEps) {
      // The next step would reach the incumbent. Past a refutation, the last target is just
      // below the incumbent itself, from the frontier kept: refuted, it proves the incumbent
      // optimal, where the plain search from the root would expand again every node below the
      // targets refuted (seed-29 small-loop-04 of random_small.py with its optimum as a warm
      // start: 4.8 -> 9.5 s of CPU before this, as the optimum stopped the targets one short).
      if (below_upper || !(out.bound > out.start) || out.bound >= options.upper - kTimeEps) break;
      target = options.upper - 2 * kTimeEps;  // the cutoff an incumbent of `upper` gives (search_shared.cc)
      below_upper = true;
    }
    // Within the limits; once a target was refuted, within `grace` times them.
    const double grace = out.bound > out.start ? std::max(1.0, options.grace) : 1.0;
    const std::int64_t nodes_left = static_cast<std::int64_t>(grace * static_cast<double>(options.node_limit)) - out.nodes;
    const double time_left = grace * options.time_limit - elapsed();
    if (nodes_left <= 0 || time_left <= 0) break;
    SolveOptions o = options.search;
    o.target = target;
    o.known_bound = std::max(o.known_bound, out.bound);
    o.node_limit = o.node_limit >= 0 ? std::min(o.node_limit, nodes_left) : nodes_left;
    o.time_limit = std::min(o.time_limit, time_left);
    o.gap = 0;
    if (!o.device_memo) o.device_memo = memo.get();
    if (options.frontier_bytes > 0) o.keep_cut = cut.get();
    const double started = elapsed();
    SolveResult r;
    if (tree && tree->retargetable()) {
      r = tree->raise_target(target, part_limits(o));
    } else {
      (void)cut->take();
      tree = std::make_unique<TreeSearch>(instance, o);
      r = tree->run({});
    }
    ProbeStep step;
    step.target = target;
    step.below_incumbent = below_upper;
    step.nodes = r.stats.nodes;
    step.relaxation_nodes = r.stats.device_node_nodes;
    step.seconds = elapsed() - started;
    out.nodes += r.stats.nodes;
    if (r.schedule) {
      step.found = true;
      out.bound = std::max(out.bound, r.bound);
      out.steps.push_back(step);
      out.proven = r.status == SolveResult::Status::kOptimal;
      out.makespan = r.makespan;
      out.found = std::move(r);
      if (keep && !out.proven && tree->resumable_from_frontier()) {
        *keep = ProbingSearch{std::move(memo), std::move(cut), std::move(tree)};
      }
      break;
    }
    // Refuted: no schedule at most the target (the search below it exhausted, or every open node
    // at the target); otherwise a limit stopped it, and what it proved still counts.
    step.refuted = r.bound >= target - kTimeEps;
    out.bound = std::max(out.bound, r.bound);
    // Nothing below the incumbent: it is optimal, its makespan the bound.
    if (below_upper && step.refuted) out.bound = std::max(out.bound, options.upper);
    out.steps.push_back(step);
    if (!step.refuted) break;
    // Refuted in few nodes: the optimum is likely further up; the next step is skipped (seed-17
    // small-loop-06, optimum 4.5% above the bound: 0.47 -> 0.37 s; seed-13 v-00 0.21 -> 0.17 s).
    if (r.stats.nodes < kQuickRefutation) ++k;
    // Refuted only after a long search: the next target's search would be longer still, the
    // more so the wider its step; the steps start again from the first (after ++k).
    if (r.stats.nodes >= options.long_refutation) k = static_cast<std::size_t>(-1);
  }
  out.seconds = elapsed();
  return out;
}

}  // namespace optpipe
