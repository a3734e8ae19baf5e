#include "solve/solve_pipeline.h"

#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <memory>
#include <optional>

#include <tbb/task_arena.h>

#include "cache/signature.h"
#include "heuristics/improve_rounds.h"
#include "heuristics/local_search.h"
#include "kernels/cuda_devices.h"
#include "model/error.h"
#include "model/simulator.h"
#include "model/validator.h"
#include "search/bound_probing.h"
#include "solve/early_search.h"

namespace optpipe {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The heuristics' share of the time limit (the local search gets up to 40% in all).
constexpr double kHeuristicsShare = 0.25;
// Tree first: instances of at most this many compute ops, for at most this many nodes and this
// share of the time limit (and never more than kTreeFirstSeconds). 200k nodes: on the random V
// and loop instances of bench/solvers/random_small.py that it proves, the proof takes 25k-94k
// nodes (0.2-0.4 s); with 20k it stopped short and the tree had to start again after the local
// search and the relaxation, 0.3-0.5 s later (bench/README.md, "Small instances against CP-SAT").
// 20% and 4 s: with 0.5 s and 5% the time bound first, at about 70k nodes, on the five of seeds
// 11, 13 and 17 whose proofs took 123k-162k nodes (1.05-1.5 s), and starting again made them
// 1.5-1.9 s. With 2 s, seed-7 small-v-06 (its proof 17k nodes in 1.8 s, the device relaxation
// costly there) stopped short on this 2-core VM in most runs and took 7-9 s (the full local
// search, 4 x 120k simulations at the default limit, then the tree again), 2.4-3.0 s with 4 s;
// where the tree first does not prove, the instances that stay unproven at 60 s end the same.
constexpr int kTreeFirstMaxOps = 256;
constexpr std::int64_t kTreeFirstNodes = 200000;
constexpr double kTreeFirstShare = 0.2;
constexpr double kTreeFirstSeconds = 4.0;
// Probing before it (probe()) starts its targets within the tree first's nodes and time; one
// searched after a refuted target may run to this many times those (ProbingOptions::grace).
constexpr double kProbingGrace = 2.0;
// ... and with offload at most this many nodes: there the tree is weak at this depth
// (offload-slow-pcie-4x8: 20k nodes, 0.46 s, no proof) and the relaxation proves most of them,
// but where the heuristics' schedule is optimal and the root's cheap bounds are not, a few dozen
// nodes prove it before the full local search's 0.1 s (offload-random-16 of
// bench/solvers/random_offload.py: 58 nodes; 0.13 s -> 0.01 s from process start). 1000 nodes
// cost the other offload instances of that family and the shipped ones 0-0.01 s, 5000 up to 0.04 s.
constexpr std::int64_t kTreeFirstOffloadNodes = 1000;
// ... and the quick local search before it, per start, whatever the time limit.
constexpr std::int64_t kTreeFirstQuickEvaluations = 1000;
// With offload, before the quick phase, the root's single-stage relaxation within this many
// search nodes a stage (brief_bound_fn): where it finishes (a millisecond or two) the quick
// searches stop as soon as they meet it.
constexpr std::int64_t kBriefRelaxationNodes = 1000;
// ... from this many of the best heuristics (besides the relaxation's guided start).
constexpr int kTreeFirstQuickStarts = 1;
// ... each stopping after this many simulations without a new best.
constexpr std::int64_t kTreeFirstQuickStall = 1500;
// ... and so does each run of the full local search after the tree first's glimpse or the
// relaxation (see warm_start_options).
constexpr std::int64_t kSmallFullStall = 1500;

// Large instances (issue 21): from this many compute ops on, the tree search is not run and the
// local search gets the time instead, in rounds on every thread until the end (see the header).
// Measured on the family of bench/README.md ("The solver at scale"): at 16 x 64 (3072 ops) the
// tree expanded 190-800 nodes a second, 84% of its time in the bounds, and in 17-50 s never
// improved the incumbent nor the bound; gpt-8x32-18g (768 ops) and gpt-8x24-tight keep it.
constexpr int kScaleOps = 2048;
// At scale, what the rounds leave of the time limit for the root bound and the result.
constexpr double kScaleReserve = 0.02;
// The tree first's local search beside it only from a guided start within this share of the
// cheap bound (local_search_beside).
constexpr double kBesideNearBound = 0.03;
// What the local search from a heuristic with the root relaxation's order in it is called.
constexpr const char* kGuideName = "relaxed order";

// The cache's part of a solve. Never a reason to fail: every problem becomes a warning and the
// solve goes on without the cache.
struct CacheSession {
  std::unique_ptr<cache::ScheduleCache> store;  // null: off
  cache::Signature sig;
  cache::LookupResult hit;
  std::string file;

  bool exact() const { return hit.kind == cache::LookupResult::Kind::kExact; }
};

CacheSession look_up(const Instance& inst, const PipelineOptions& o, SolveObserver& obs) {
  CacheSession c;
  c.file = o.cache_file;
  if (c.file.empty()) return c;
  try {
    c.sig = cache::signature(inst);
    c.store = std::make_unique<cache::ScheduleCache>(c.file);
    c.hit = cache::lookup(*c.store, inst, c.sig);
  } catch (const std::exception& e) {  // e.g. out of memory: still not a reason to fail
    c.hit = cache::LookupResult{};
    c.hit.kind = cache::LookupResult::Kind::kUnavailable;
    c.hit.message = "off for this run (internal error)";
    c.hit.warnings.push_back(c.file + ": " + e.what());
  }
  for (const auto& w : c.hit.warnings) obs.on_warning("cache: " + w);
  if (c.hit.kind == cache::LookupResult::Kind::kUnavailable) c.store.reset();
  obs.on_cache_lookup(c.hit, c.file);
  return c;
}

// Stores the result (better-only).
void store(CacheSession& c, const Instance& inst, const PipelineOptions& o, const SolveResult& res, double seconds,
           SolveObserver& obs) {
  if (!c.store || !res.schedule) return;
  cache::StoreOutcome outcome = cache::StoreOutcome::kInserted;
  cache::CacheStatus st;
  try {
    st = cache::store_result(*c.store, inst, c.sig, *res.schedule, res.makespan, res.bound, to_string(res.status),
                             o.build, seconds, &outcome);
  } catch (const std::exception& e) {
    st = cache::CacheStatus::error(c.file + ": " + e.what());
  }
  if (!st.ok) {
    obs.on_warning("cache: not stored: " + st.message);
    return;
  }
  obs.on_cache_store(outcome, c.file);
}

// An exact, proven optimal cache hit: the answer, without searching.
PipelineResult answer_from_cache(const CacheSession& c) {
  PipelineResult out;
  out.from_cache = true;
  out.cache_key = c.hit.exact_key;
  SolveResult& r = out.result;
  Schedule sch = *c.hit.schedule;
  sch.status = "optimal";
  sch.bound = c.hit.makespan;
  sch.gap = 0.0;
  r.status = SolveResult::Status::kOptimal;
  r.schedule = std::move(sch);
  r.makespan = c.hit.makespan;
  r.bound = c.hit.makespan;
  r.gap = 0.0;
  r.reason = "cache: exact hit, proven optimal";
  return out;
}

// The search's options from the pipeline's, with `left` seconds of the time limit.
SolveOptions search_options(const PipelineOptions& o, double left) {
  SolveOptions opt;
  opt.time_limit = left;
  opt.node_limit = o.node_limit;
  opt.gap = o.gap;
  opt.threads = o.threads;
  opt.transposition = o.transposition;
  opt.pool_memory_bytes = o.pool_memory_bytes;
  opt.stage_relaxation = o.stage_relaxation;
  opt.device_relaxation = o.device_relaxation;
  opt.quantum = o.quantum;
  opt.lns_time_share = o.lns;
  opt.bounds = o.bounds;
  opt.batch_size = o.batch_size;
  opt.stop = o.stop;
  return opt;
}

}  // namespace

std::string PipelineResult::best_from() const {
  if (from_cache) return "cache";
  const double tolerance = 1e-9 * std::max(1.0, result.makespan);
  if (result.warm_start.empty() || result.makespan < result.warm_start_makespan - tolerance) return "search";
  return result.warm_start;
}

std::string PipelineResult::bound_from() const {
  const SolveStats& st = result.stats;
  const double tol = 1e-7 * std::max(1.0, result.bound);
  if (from_cache) return "cache";
  if (result.bound > result.root_bound + tol) {
    return result.status == SolveResult::Status::kOptimal && st.nodes > 0 ? "proof" : "tree";
  }
  if (st.group_energy_bound > 0 && st.group_energy_bound >= result.bound - tol) return "PCIe group energy";
  if (st.group_forward_bound > 0 && st.group_forward_bound >= result.bound - tol) return "PCIe group forward";
  if (st.byte_energy_bound > 0 && st.byte_energy_bound >= result.bound - tol) return "byte-time energy";
  if (st.device_relaxation_bound > 0 && st.device_relaxation_bound >= result.bound - tol) return "device relaxation";
  if (st.single_stage_bound > 0 && st.single_stage_bound >= result.bound - tol) return "single-stage relaxation";
  return "node bounds";
}

double PipelineResult::seconds_to_best() const {
  return best_from() == "search" ? search_started + result.stats.seconds_to_best : search_started;
}

namespace {

// One call of solve_pipeline: its phases as methods over the state they share (the clock, the
// cache session, the heuristics, the root relaxation and the short tree search).
class PipelineRun {
 public:
  PipelineRun(const Instance& inst, const PipelineOptions& o, SolveObserver& obs)
      : inst_(inst), o_(o), obs_(obs), started_(Clock::now()) {}

  PipelineResult run() {
    if (o_.bounds == BoundsMode::kGpu) {  // say so before the heuristics run, not after
      const CudaDevices cuda = query_cuda_devices();
      if (cuda.devices.empty()) throw InputError("--bounds gpu: " + cuda.status);
    }
    cached_ = look_up(inst_, o_, obs_);
    if (cached_.exact() && cached_.hit.proven_optimal && cached_.hit.schedule) {
      PipelineResult out = answer_from_cache(cached_);
      out.seconds = since(started_);
      return out;
    }
    given_ = given_makespan();
    // The heuristics, within a quarter of the time limit (each stops looking at its deadline or
    // the stop request and keeps what it has); then warm starts against the root's bounds (the
    // thorough one is kept: the search reuses its relaxation).
    run_heuristics();
    const BoundedWarmStarts bounded = build_warm_starts(inst_, heur_, warm_start_options(), root_bound_fn(),
                                                        tree_next_fn(), brief_bound_fn());
    const SolveResult* tree = tree_first_ && !probing_proved_ ? &*tree_first_ : nullptr;
    const ImprovedStart* polish = tree_polish_ ? &*tree_polish_ : nullptr;
    const ProbingResult* probing = probing_ ? &*probing_ : nullptr;
    obs_.on_warm_starts(WarmStartReport{inst_, inst_.num_compute_ops(), heur_, bounded, tree, polish, probing});
    if (bounded.ended_by_caller && tree_first_) {
      obs_.on_root_bound(tree_root_);  // the phases in their usual order
      PipelineResult out;
      out.tree_first = true;
      out.search_started = tree_started_;
      return finish(std::move(out), *tree_first_);
    }
    return search(bounded);
  }

 private:
  // Simulations per local search start: --local-search N, else from the time limit.
  std::int64_t per_start_evaluations() const {
    return o_.local_search >= 0 ? o_.local_search : local_search_budget(o_.time_limit);
  }

  WarmStartOptions warm_start_options() const {
    WarmStartOptions wo;
    wo.stop = o_.stop;
    wo.evaluations = per_start_evaluations();
    wo.target = cached_.exact() ? cached_.hit.bound : 0.0;
    wo.guide_name = kGuideName;
    wo.on_improved = [this](double makespan, const std::string& from) {
      trace_.note(since(started_), makespan, 0, "local search from " + from);
    };
    wo.time_limit = std::max(0.0, 0.4 * o_.time_limit - since(started_));  // at most 40% of the time limit
    // Where the tree tries first (without offload: with it the tree takes only a glimpse), the
    // quick phase stays at what a 20 s limit gives: the tree proves most of those instances in
    // milliseconds, and at the default 60 s the quick phase's 6000 simulations a start took 0.05
    // s of small-chain-06's 0.09 s (bench/README.md). With offload the larger quick phase reaches
    // offload-fast-pcie-4x8's cheap bound, where 1000 simulations need the relaxation after.
    if (inst_.num_compute_ops() <= kTreeFirstMaxOps && !inst_.can_offload() && o_.local_search < 0) {
      wo.quick_evaluations = kTreeFirstQuickEvaluations;
    }
    // On every small instance the quick phase is there for a first incumbent (the tree's, or
    // with offload the relaxation's cutoff), and the guide's hybrid and the best heuristic give
    // it: the second and third best heuristics' searches rarely gave the best one, and kept a
    // thread 10-20 ms (with offload at the default limit, 6000 simulations a start: more) before
    // the tree or the relaxation. The random instances of bench/solvers/ and the shipped ones,
    // interleaved A/B: V, loop, chain and unsplit 7.5-8.9% less wall time in all, offload 21-23%
    // at the default limit and 5% at 10 s (bench/README.md, "The quick phase from two starts").
    // And each run stops after kTreeFirstQuickStall simulations without a new best: with
    // offload at the default limit (6000 a start) the best heuristic's search often finds its
    // best early and then runs on before the tree's glimpse or the relaxation, which prove it
    // (offload-random-06: 40.07 ms found, then 0.07 s of simulations, then 605 tree nodes).
    // Where the search reaches the cheap bound it keeps improving (offload-fast-pcie-4x8 and
    // shared-pcie-4x8 after about 4300 simulations; 1000 without a new best stopped the latter
    // at 3879, short of it). The offload instances of bench/solvers/ and the shipped ones,
    // interleaved: 18% less wall time in all (bench/README.md, "The quick phase from two starts").
    // The full local search stops likewise: on the small offload instances it runs where the
    // tree's glimpse proved nothing, from the guided start and the three best heuristics, 2000
    // simulations a start per second of the time limit (114,000-120,000 at the default 60 s),
    // up to the relaxation's bound, which it seldom meets, and it finds its best early: on
    // offload-random-34 of `random_offload.py --seed 8` the best heuristic's 33.21 ms is the
    // optimum, and the four runs went on for 2 s before the tree proved it in 441 nodes (now
    // 0.07 s in all). The 61 random offload instances of seeds 7 and 8 that prove and the three
    // shipped ones, interleaved: at the default limit 8.85 -> 3.71 s in all, at 10 s 4.49 ->
    // 3.60 s, the same optima (bench/README.md, "The full local search stops at a stall too").
    // Without offload it runs only where the tree first did not prove: the V and loop
    // instances end as before.
    if (inst_.num_compute_ops() <= kTreeFirstMaxOps && o_.local_search < 0) {
      wo.quick_improve_best = kTreeFirstQuickStarts;
      wo.quick_stall_evaluations = kTreeFirstQuickStall;
      wo.stall_evaluations = kSmallFullStall;
    }
    wo.extra = early_;
    wo.extra_runs = early_runs_;
    if (at_scale()) {
      // The whole time left, in rounds; a fixed budget (--local-search N) is N per start of the
      // small instances' full phase, in all.
      wo.rounds = true;
      wo.time_limit = std::max(0.0, (1 - kScaleReserve) * o_.time_limit - since(started_));
      wo.round_evaluations = o_.local_search >= 0 ? o_.local_search * wo.improve_best : -1;
      wo.threads = o_.threads;
      // Under a time limit no quick phase: the rounds start from the best schedules at once, on
      // every thread. The quick phase ran one search per start from the three best heuristics,
      // and at scale only the best one's ever led anywhere: on bench-gpt3-28.3b-32x128-4act
      // it spent 13-17 s a start (PipeOffload's 2681 ms -> 2603, Waves' 4963 -> 4689, where
      // Periodic's 2350 was the start that counted), and the rounds got 19 s of the 60 instead
      // of 44 (bench/README.md, "The solver at scale").
      if (o_.local_search < 0) wo.quick_evaluations = 0;
    }
    return wo;
  }

  // Every heuristic, within a quarter of the time limit; at scale under a time limit with a
  // local search beside them on the core they leave idle (early_search.h).
  void run_heuristics() {
    auto progress = [&](const HeuristicResult& h) {
      obs_.on_heuristic(h, since(started_));
      if (h.ok()) trace_.note(since(started_), h.sim.makespan, 0, h.name);
    };
    const RunLimits limits = RunLimits::within(kHeuristicsShare * o_.time_limit - since(started_), o_.stop);
    constexpr double kInf = std::numeric_limits<double>::infinity();
    // The root's cheap bounds first (milliseconds, no single-stage relaxation): a heuristic or
    // search that meets them is optimal.
    SolveOptions ro;
    ro.stage_relaxation = false;
    ro.quantum = o_.quantum;
    ro.stop = o_.stop;
    if (!at_scale() || o_.local_search >= 0) {
      // Only the node bounds here (well under a millisecond below scale), so that the heuristics
      // that search are not run where a fixed pattern meets them: Periodic alone took 62-280 ms
      // of gpt-8x24's, gpt-8x32's and scale-llama2-7b-16x32's solves, whose ZB-H2 schedules are
      // optimal.
      ro.device_relaxation = false;
      const double bound = root_lower_bound(inst_, kInf, ro).bound;
      heur_ = run_all_heuristics(inst_, true, progress, limits, bound > 0 ? bound : -kInf);
      return;
    }
    ro.device_relaxation = o_.device_relaxation;
    const double cheap = root_lower_bound(inst_, kInf, ro).bound;
    trace_.note(since(started_), kInf, cheap, "root bound");
    EarlySearch early = run_heuristics_beside_search(inst_, progress, limits, cheap);
    heur_ = std::move(early.heuristics);
    if (!early.improved) return;
    trace_.note(since(started_), early.after, 0, "local search beside the heuristics");
    early_runs_.push_back({early.improved->solver, early.before, early.after, early.evaluations, early.seconds});
    early_runs_.back().heuristic = early.from + ", beside the slow heuristics";
    early_.push_back(std::move(*early.improved));
  }

  bool at_scale() const { return inst_.num_compute_ops() >= (o_.scale_ops >= 0 ? o_.scale_ops : kScaleOps); }

  // The root bounds' options: the time left, the solve's bounds, and `stop`, which the caller
  // sets once the bound cannot matter (and on o_.stop).
  SolveOptions root_options(const std::atomic<bool>* stop) const {
    SolveOptions ro;
    ro.time_limit = std::max(0.0, o_.time_limit - since(started_));
    ro.stage_relaxation = o_.stage_relaxation;
    ro.device_relaxation = o_.device_relaxation;
    ro.quantum = o_.quantum;
    ro.stop = stop;
    return ro;
  }

  // The root's bounds for the warm starts; the thorough one (with the single-stage relaxation)
  // is kept for the search, the cheap one's device relaxation for the thorough one and the tree.
  RootBoundFn root_bound_fn() {
    return [this](double incumbent, bool thorough, const std::atomic<bool>* stop) {
      SolveOptions ro = root_options(stop);
      ro.stage_relaxation = thorough && o_.stage_relaxation;
      if (thorough) ro.root_relaxation = &cheap_;  // its device relaxation, not searched again
      incumbent = std::min(incumbent, given_);
      const RootBound r = root_lower_bound(inst_, incumbent, ro);
      (thorough ? relaxed_ : cheap_) = r;
      trace_.note(since(started_), std::numeric_limits<double>::infinity(), r.bound,
                  thorough ? "root bound with the relaxation" : "root bound");
      return GuidedBound{r.bound, r.device, r.order, r.relaxation_ran};
    };
  }

  // Small instances with offload: the root's single-stage relaxation within
  // kBriefRelaxationNodes a stage, before the quick phase (build_warm_starts' brief bound). The
  // thorough bound comes after the quick phase, with its best as the cutoff, so the quick searches
  // ran on past the optimum where it was found early, up to their budget or stall (0.05-0.09 s on
  // offload-random-10 of random_offload.py --seed 7 and -16 and -25 of --seed 9), and then the
  // relaxation proved it in milliseconds. Here the cutoff is the best heuristic's makespan, which
  // makes the relaxation's search longer: without the node budget, run before the quick phase,
  // it cost more than it saved (seed 9's -01 0.03 -> 0.34 s, offload-fast-pcie-4x8 0.06 -> 0.46
  // s). Stored like the thorough bound, which replaces it when it runs.
  BriefBoundFn brief_bound_fn() {
    if (inst_.num_compute_ops() > kTreeFirstMaxOps || !inst_.can_offload() || !o_.stage_relaxation ||
        o_.local_search >= 0) {
      return {};
    }
    return [this](double incumbent, const std::atomic<bool>* stop) {
      SolveOptions ro = root_options(stop);
      ro.root_relaxation = &cheap_;  // its device relaxation, not searched again
      ro.root_relaxation_nodes = kBriefRelaxationNodes;
      relaxed_ = root_lower_bound(inst_, std::min(incumbent, given_), ro);
      trace_.note(since(started_), std::numeric_limits<double>::infinity(), relaxed_.bound,
                  "root bound with a brief relaxation");
      // Reported as the relaxation's only where it raised the cheap bound: a stage that finishes
      // in 1000 nodes below it shows nothing (offload-fast-pcie-4x8, whose quick search then
      // meets the cheap bound).
      const bool raised = relaxed_.relaxation_ran && relaxed_.bound > cheap_.bound + kTimeEps;
      return GuidedBound{relaxed_.bound, relaxed_.device, relaxed_.order, raised};
    };
  }

  // Small instances: when the quick local search has not met the cheap bound, the tree next,
  // from every schedule so far, for a few thousand nodes, before the relaxation and the full
  // local search. It proves most of them in milliseconds, where those would take a second
  // (issue 21); otherwise its best schedule joins the warm starts.
  BetweenPhasesFn tree_next_fn() {
    return [this](const WarmStarts& so_far) {
      // With offload only a glimpse (kTreeFirstOffloadNodes): the relaxation is what proves most of those.
      if (inst_.num_compute_ops() > kTreeFirstMaxOps || o_.node_limit >= 0) return false;
      std::vector<Schedule> starts = so_far.schedules;
      append_given(starts);
      SolveOptions quick = search_options(o_, std::min(kTreeFirstShare * o_.time_limit, kTreeFirstSeconds));
      quick.node_limit = inst_.can_offload() ? kTreeFirstOffloadNodes : kTreeFirstNodes;
      quick.stage_relaxation = false;  // the relaxation comes next if this does not prove it
      quick.gap = 0.0;
      if (cached_.exact()) quick.known_bound = cached_.hit.bound;
      quick.on_root_bound = [this](double b) { tree_root_ = b; };
      quick.root_relaxation = &cheap_;
      tree_started_ = since(started_);
      quick.beside = local_search_beside(so_far);
      // Where the guided local search runs beside the tree, it finds the optimum the root bound
      // proves sooner than probing would (small-v-04: 0.22 s, and 0.61 s with probing first).
      if (!quick.beside && probe(so_far, quick)) return true;
      if (probing_) {
        if (probing_->found && probing_->found->schedule) starts.push_back(*probing_->found->schedule);
        quick.known_bound = std::max(quick.known_bound, probing_->bound);
        quick.time_limit = std::max(0.0, quick.time_limit - probing_->seconds);  // the tree first's time in all
      }
      tree_search_ = std::make_unique<TreeSearch>(inst_, quick);
      tree_first_ = tree_search_->run(starts);
      if (tree_first_->status == SolveResult::Status::kOptimal) return true;
      polish_tree_best();
      return false;
    };
  }

  // Probing (search/bound_probing.h) before the tree first, on instances without offload (with
  // offload the tree first is a glimpse, and the relaxation proves them): there the root bound
  // is often the optimum or close to it, and the tree with the heuristics' incumbents explores
  // every node between the two before it finds the optimum. First made for the V and loop
  // placements whose bound is the device relaxation's; where none applies the targets cut all
  // the same (seed-1 small-loop-00 of random_small.py: 0.82-1.18 s instead of 1.25-1.46, the
  // chain and unsplit ones spend at most 0.02 s on refutations that raise the tree first's
  // known bound). Within the tree first's node budget and time (ProbingOptions::grace). True
  // when it proved the optimum (tree_first_ is then its result).
  bool probe(const WarmStarts& so_far, const SolveOptions& quick) {
    if (!o_.probing || inst_.can_offload() || !(cheap_.bound > 0)) return false;
    double upper = std::numeric_limits<double>::infinity();
    if (const HeuristicResult* best = heur_.best_result()) upper = best->sim.makespan;
    for (const ImprovedStart& i : so_far.improved) upper = std::min(upper, i.after);
    upper = std::min(upper, given_);
    ProbingOptions po;
    po.search = quick;
    po.search.on_root_bound = {};
    po.bound = std::max(cheap_.bound, quick.known_bound);
    po.upper = upper;
    po.node_limit = quick.node_limit;
    po.time_limit = quick.time_limit;
    po.grace = kProbingGrace;
    po.two_device_nodes = o_.two_device_nodes;
    po.search.time_limit = kProbingGrace * quick.time_limit;
    po.search.node_limit = -1;  // probe_targets sets each target's
    probing_ = probe_targets(inst_, po, &probing_search_);
    if (probing_->steps.empty()) {
      probing_.reset();
      return false;
    }
    if (!probing_->found || probing_->found->status != SolveResult::Status::kOptimal) return false;
    tree_root_ = probing_->found->root_bound;
    tree_first_ = std::move(*probing_->found);
    probing_->found.reset();
    probing_proved_ = true;
    return true;
  }

  // The schedules given to the run: the cache's hit (re-simulated and repaired), then the
  // caller's warm starts.
  void append_given(std::vector<Schedule>& starts) const {
    if (cached_.hit.schedule) starts.push_back(*cached_.hit.schedule);
    starts.insert(starts.end(), o_.warm_starts.begin(), o_.warm_starts.end());
  }
  // The best makespan among them (infinity: none runs): an incumbent for the root's bounds and
  // for probing, as the heuristics' are. Computed once, after the cache's lookup (given_).
  double given_makespan() const {
    double best = cached_.hit.schedule ? cached_.hit.makespan : std::numeric_limits<double>::infinity();
    for (const Schedule& s : o_.warm_starts) {
      if (s.num_devices() != inst_.num_devices() || !check_structure(inst_, s).empty()) continue;
      const SimResult r = simulate(inst_, s, SimOptions::quiet());
      if (r.feasible) best = std::min(best, r.makespan);
    }
    return best;
  }

  // The tree first's second thread (SolveOptions::beside): when the quick phase had the device
  // relaxation's order as a guide, the full phase's local search from the guided start's quick
  // result (the budget of a start of the full phase), every new best handed to the tree at once.
  // The order is what the tree's dives do not use; the guided search finds small-v-04's optimum
  // (bench/solvers/random_small.py; its root bound is the optimum, so finding it is the proof) in
  // 9.8k simulations, 0.07 s from process start, where the tree on both threads took 0.25 s.
  // Where the tree finds the optimum itself, the second thread was the tree's for that time
  // instead: small-loop-07 0.15-0.18 s -> 0.19-0.22 s (bench/README.md). So only where the guided
  // start's quick result is within kBesideNearBound of the cheap bound (v-04: 33.81 against 33.23;
  // loop-07: 34.00 against 30.85, and seed-13 v-00 0.07 -> 0.05 s, seed-17 loop-06 0.11 -> 0.09 s
  // without it). Without a guide: none.
  std::function<void(const BesideTree&)> local_search_beside(const WarmStarts& so_far) const {
    const std::int64_t evaluations = per_start_evaluations();
    const std::string suffix = " + " + std::string(kGuideName);
    const std::size_t runs = so_far.improved.size();
    if (runs == 0 || runs > so_far.schedules.size() || evaluations <= 0) return {};
    // The quick phase's improved schedules close the list, in the order of its runs (the guide's first).
    const std::string& first = so_far.improved.front().heuristic;
    if (!first.ends_with(suffix)) return {};
    if (so_far.improved.front().after > (1 + kBesideNearBound) * cheap_.bound) return {};
    Schedule start = so_far.schedules[so_far.schedules.size() - runs];
    return [this, start = std::move(start), evaluations](const BesideTree& b) {
      LocalSearchOptions lo;
      lo.max_evaluations = evaluations;
      lo.stop = b.stop;
      lo.live_target = b.bound;
      lo.on_new_best = b.offer;
      improve_schedule(inst_, start, lo);
    };
  }

  // The tree first did not prove it: a local search from its best schedule, with the budget each
  // start of the full phase gets; an improvement joins the search's warm starts (polished_). The
  // tree's schedules are often a few moves from better ones that its search would reach late
  // (seed-17 small-v-02 of bench/solvers/random_small.py, one thread: proven in 1.44 s instead of
  // 3.84 s; bench/README.md).
  void polish_tree_best() {
    const std::int64_t evaluations = per_start_evaluations();
    if (!tree_first_->schedule || evaluations <= 0) return;
    // Not when the tree's best is a warm start's (or as good): the full phase improves those.
    if (!(tree_first_->makespan < tree_first_->warm_start_makespan - kTimeEps)) return;
    const auto t0 = Clock::now();
    LocalSearchOptions lo;
    lo.max_evaluations = evaluations;
    lo.target = tree_first_->bound;
    lo.stop = o_.stop;
    // As the full phase's runs (kSmallFullStall): offload-random-12 of random_offload.py
    // --seed 8, 48.03 ms from the tree's glimpse, ran its 20,000 simulations at --time-limit 10
    // (0.16 s of the solve's 0.25) without a better schedule.
    lo.stall_evaluations = o_.local_search < 0 ? kSmallFullStall : 0;
    LocalSearchStats ls;
    Schedule better = improve_schedule(inst_, *tree_first_->schedule, lo, &ls);
    tree_polish_ = ImprovedStart{"the tree's best", tree_first_->makespan, ls.final_makespan, ls.evaluations,
                                 since(t0)};
    if (!(ls.final_makespan < tree_first_->makespan - kTimeEps)) return;
    better.solver = "optpipe solve (branch-and-bound) + local search";
    polished_ = std::move(better);
    trace_.note(since(started_), ls.final_makespan, 0, "local search from the tree's best");
  }

  // The search, from every warm start, the cache's hit and the short tree's best.
  PipelineResult search(const BoundedWarmStarts& bounded) {
    std::vector<Schedule> warm = bounded.starts.schedules;
    append_given(warm);
    if (tree_first_ && tree_first_->schedule) warm.push_back(*tree_first_->schedule);
    if (polished_) warm.push_back(*polished_);

    SolveOptions opt = search_options(o_, std::max(0.0, o_.time_limit - since(started_)));
    // An exact hit's bound was proven on this very instance by an earlier run, and so was the
    // root bound before the local search.
    if (cached_.exact()) opt.known_bound = cached_.hit.bound;
    opt.known_bound = std::max(opt.known_bound, bounded.bound);
    if (probing_) opt.known_bound = std::max(opt.known_bound, probing_->bound);  // its refuted targets
    opt.root_relaxation = relaxed_.relaxation_ran || relaxed_.device_relaxation_ran ? &relaxed_ : &cheap_;
    opt.on_root_bound = [this](double b) { obs_.on_root_bound(b); };
    opt.on_lns = [this](double s, double before, double after, int k) { obs_.on_lns(s, before, after, k); };
    opt.on_progress = [this](const SolveProgress& p) {
      obs_.on_progress(p);
      trace_.note(since(started_), p.incumbent, p.bound, "search");
    };
    opt.tree = !at_scale();
    if (!at_scale() && inst_.num_compute_ops() > kTreeFirstMaxOps && o_.node_limit < 0) opt.beside = rounds_beside(warm);

    PipelineResult out;
    out.search_started = since(started_);
    // Where probing's last target found a schedule and stopped at its limit, its open nodes are
    // further on than the tree first's, which had only the time probing left (ProbingSearch,
    // search/bound_probing.h): the search goes on from them.
    if (probing_search_.search && resume_conditions(opt)) {
      obs_.on_root_bound(tree_root_);
      out.probing_resumed = true;
      tree_search_.reset();
      return finish(std::move(out), probing_search_.search->resume_from_frontier(warm, part_limits(opt)));
    }
    probing_search_ = {};
    if (resume_tree_first(opt)) {
      obs_.on_root_bound(tree_root_);
      out.tree_resumed = true;
      return finish(std::move(out), tree_search_->resume(warm, part_limits(opt)));
    }
    tree_search_.reset();  // its open nodes are not needed any more
    const SolveResult result = solve(inst_, warm, opt);
    return finish(std::move(out), result);
  }

  // Whether the search goes on from the tree first's open nodes (TreeSearch::resume) instead of
  // starting again from the root: where the tree first stopped at its limit and the search would
  // run as it did (without offload, and with no stage whose single-stage relaxation the nodes
  // would ask, which the tree first leaves out; nothing beside the tree). Then what the tree first
  // expanded is not expanded again: small-v-02 of bench/solvers/random_small.py on a slow 2-core
  // VM, where the tree first stops at 2 s (96k nodes), then needs 26k more nodes (0.35 s) with the
  // local search's optimum, where starting again took 113k (2.2 s) (bench/README.md).
  bool resume_tree_first(const SolveOptions& opt) const {
    return tree_search_ && tree_search_->resumable() && resume_conditions(opt);
  }
  // ... and the same for probing's search (ProbingSearch).
  bool resume_conditions(const SolveOptions& opt) const {
    return !inst_.can_offload() && relaxed_.relaxed_stages.empty() && opt.tree && !opt.beside &&
           opt.lns_time_share <= 0 && opt.node_limit < 0;
  }

  // Between the small instances and the large ones (256 to 2048 compute ops), with two threads:
  // the local search in rounds (improve_rounds.h, three searches a round from the three best
  // schedules, one thread) beside the tree until it ends, handing it every better schedule. There
  // the tree rarely improves the incumbent, but its bound can rise; the rounds alone (the large
  // instances' mode) found better schedules and lower bounds (bench/README.md: on
  // paper-gpt3-6.2b-8x24-3act 1146.39 -> 1121.87 ms, on scale-llama2-7b-8x32-2act the bound 2174.44
  // -> 2146.94); beside it both, mostly (1130.39, 2160.69). Like the rounds at scale, only under a
  // time limit: with a node limit the tree has both threads, and the result does not depend on them.
  std::function<void(const BesideTree&)> rounds_beside(const std::vector<Schedule>& warm) const {
    return [this, warm](const BesideTree& b) {
      RoundsOptions ro;
      ro.threads = 1;
      ro.tasks = 3;
      ro.stop = b.stop;
      ro.target = b.bound->load();
      ro.on_new_best = b.offer;
      improve_in_rounds(inst_, warm, ro);
    };
  }

  // The result with the best heuristic named, stored in the cache, timed.
  PipelineResult finish(PipelineResult out, const SolveResult& result) {
    out.result = result;
    if (probing_) {
      out.probing = *probing_;
      out.probing->found.reset();
    }
    if (const HeuristicResult* best = heur_.best_result()) {
      out.best_heuristic = best->name;
      out.best_heuristic_makespan = best->sim.makespan;
    }
    store(cached_, inst_, o_, out.result, since(started_), obs_);
    out.seconds = since(started_);
    trace_.note(out.seconds, out.result.makespan, out.result.bound, out.best_from());
    out.trace = trace_.points();
    return out;
  }

  const Instance& inst_;
  const PipelineOptions& o_;
  SolveObserver& obs_;
  const Clock::time_point started_;
  CacheSession cached_;
  double given_ = std::numeric_limits<double>::infinity();  // given_makespan(), once the cache was asked
  BestResult heur_;
  RootBound relaxed_, cheap_;
  double tree_root_ = 0, tree_started_ = 0;
  std::optional<SolveResult> tree_first_;
  std::optional<ProbingResult> probing_;  // the targets tried before the tree first (probe)
  ProbingSearch probing_search_;          // probing's last search, to go on from (probe, search)
  bool probing_proved_ = false;           // ... proved the optimum: tree_first_ is its result
  std::unique_ptr<TreeSearch> tree_search_;  // the tree first's search, kept to go on from (resume_tree_first)
  std::optional<ImprovedStart> tree_polish_;
  std::optional<Schedule> polished_;
  mutable SolveTraceRecorder trace_;
  std::vector<Schedule> early_;             // the local search beside the heuristics (at scale)
  std::vector<ImprovedStart> early_runs_;  // written from the warm starts' threads too
};

}  // namespace

PipelineResult solve_pipeline(const Instance& inst, const PipelineOptions& o, SolveObserver& obs) {
  // Every phase within `threads` (the heuristics' and warm starts' TBB work too, not only the
  // search's), so that --threads 1 is one thread and its warm starts run their phases in turn.
  tbb::task_arena arena(o.threads > 0 ? o.threads : tbb::task_arena::automatic);
  return arena.execute([&] { return PipelineRun(inst, o, obs).run(); });
}

PipelineResult solve_pipeline(const Instance& instance, const PipelineOptions& options) {
  SolveObserver none;
  return solve_pipeline(instance, options, none);
}

}  // namespace optpipe
