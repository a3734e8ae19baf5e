#include "search/solver.h"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <limits>
#include <memory>
#include <stdexcept>
#include <thread>

#include <tbb/task_arena.h>
#include <tbb/task_group.h>

#include "bounds/bound_problem.h"
#include "bounds/device_relaxation.h"
#include "bounds/byte_energy_bound.h"
#include "bounds/group_energy_bound.h"
#include "bounds/group_forward_bound.h"
#include "bounds/last_tails.h"
#include "kernels/cuda_devices.h"
#include "model/error.h"
#include "model/simulator.h"
#include "model/time_quantum.h"
#include "model/validator.h"
#include "search/batch_worker.h"
#include "search/dive_worker.h"
#include "search/lns.h"
#include "search/node_expansion.h"
#include "search/node_pool.h"
#include "search/search_context.h"
#include "search/search_monitor.h"
#include "search/search_node.h"
#include "search/search_shared.h"
#include "search/stage_relaxations.h"
#include "search/transposition.h"

namespace optpipe {

const char* to_string(SolveResult::Status status) {
  switch (status) {
    case SolveResult::Status::kOptimal: return "optimal";
    case SolveResult::Status::kFeasible: return "feasible";
    case SolveResult::Status::kInfeasible: return "infeasible";
    case SolveResult::Status::kUnknown: return "unknown";
  }
  return "?";
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// The device relaxations at the root: nodes per device and for all of them, so that the bound
// does not depend on the machine's speed (small-loop-03 of bench/solvers/random_small.py needs
// 1.4M nodes on device 0 for 41.72 ms, where 200k gave nothing and the root bound was 38.98; a
// budget of 0.5 s gave it 41.72 on one 2-core VM and 38.98 on one 2.5 times slower); time only
// as a safety net (a share of the limit, at most kDeviceRelaxationSeconds), which binds where
// the limit is short or the machine far slower.
constexpr std::int64_t kDeviceRelaxationNodes = 2'000'000;
constexpr std::int64_t kDeviceRelaxationTotalNodes = 4'000'000;
constexpr double kDeviceRelaxationShare = 0.2;
constexpr double kDeviceRelaxationSeconds = 2.0;
constexpr std::int64_t kDevicePairNodes = 500'000;  // the second pass's, with the pair releases
// Before them, each device's search for this many nodes: the best relaxed schedule it meets
// orders the devices, largest first (device_bound).
constexpr std::int64_t kDeviceGuessNodes = 2'000;

// The backend a mode resolves to (kAuto: the GPU when one is present, else TBB); throws
// InputError, with the reason, when a batch backend is not there.
BoundsMode resolve_backend(BoundsMode mode, const BoundProblem& problem, int batch_size) {
  if (mode == BoundsMode::kAuto) mode = query_cuda_devices().devices.empty() ? BoundsMode::kTbb : BoundsMode::kGpu;
  if (mode != BoundsMode::kCpu) {
    try {
      make_batch_bounds(mode, problem, batch_size);  // fails here, with its reason, when the backend is not there
    } catch (const std::runtime_error& e) {
      throw InputError(e.what());
    }
  }
  return mode;
}

// The branch-and-bound (solver.h): sequences the warm starts, the root, the workers and the
// monitor, and turns what they found into a SolveResult.
class BranchAndBound {
 public:
  BranchAndBound(const Instance& inst, const SolveOptions& opt)
      : inst_(inst),
        opt_(opt),
        problem_(inst),
        codec_(check_limits(inst)),
        shared_(opt.gap, opt.node_limit),
        relaxations_(inst, problem_, opt_),
        can_offload_(inst.can_offload()),
        threads_(opt.threads > 0 ? opt.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))),
        pool_(threads_) {
    shared_.set_target(opt.target);
    stats_.time_quantum = opt.quantum < 0 ? time_quantum(inst) : opt.quantum;
    shared_.set_time_quantum(stats_.time_quantum);
    if (const Neighbourhood* nb = opt.neighbourhood) {
      if (nb->guide.num_devices() != inst.num_devices() || static_cast<int>(nb->free_microbatch.size()) != inst.microbatches) {
        throw std::invalid_argument("neighbourhood: the guide or the free microbatches do not match the instance");
      }
    }
    backend_ = resolve_backend(opt.bounds, problem_, opt.batch_size);
    if (opt.transposition) tt_ = std::make_unique<TranspositionTable>(can_offload_, opt.transposition_memory_bytes);
    raise_known_bound(opt.known_bound);
  }

  // The root's bounds, in order: the node bound and the PCIe group energy bound, then the device
  // relaxations and the single-stage relaxation, each told what those before it (and a bound
  // proven elsewhere) already give. `w` holds the root's state at decision time t.
  struct RootValues {
    double before_relaxation = 0;  // all but the single-stage relaxation
    double relaxation = 0;         // the single-stage relaxation's
  };
  RootValues root_values(SearchWorker& w, double t, double cutoff) {
    double b = std::max({expander().bound(w, w.sim.snapshot(), t), group_bound(w.bound.head),
                         byte_bound(w.bound.head), group_forward(w.bound.head)});
    b = std::max(b, device_bound(w.bound.head, cutoff, std::max(b, shared_.proven_bound())));
    return {b, relaxations_.at_root(w.bound.head, cutoff, std::max(b, shared_.proven_bound()), stats_)};
  }

  // The root's bound with a cutoff of `incumbent`, without searching (root_lower_bound).
  RootBound root_bound_only(double incumbent) {
    RootBound out;
    if (obviously_infeasible(inst_)) return out;
    shared_.offer(Schedule{}, incumbent, "root bound");
    SearchWorker root(inst_);
    root.sim.start_open();
    const Simulator::Step step = root.sim.advance();
    if (step.kind != Simulator::Step::Kind::kDecision) return out;
    const RootValues v = root_values(root, step.time, incumbent);
    out.device_relaxation_ran = device_root_.ran;
    out.device_relaxation = device_root_.bound;
    out.relaxed_device = device_root_.device;
    out.device_order = device_root_.order;
    out.device_pairs_raised = stats_.device_pairs_raised;
    out.device_relaxation_nodes = stats_.device_relaxation_nodes;
    out.relaxation = v.relaxation;
    out.relaxation_ran = relaxations_.ran();
    out.relaxed_stages = relaxations_.stages();
    out.relaxed_tail_stages = relaxations_.tail_stages();
    out.relaxation_seconds = stats_.single_stage_seconds;
    out.relaxation_nodes = stats_.single_stage_root_nodes;
    out.relaxation_tail_searches = stats_.last_tail_searches;
    out.relaxation_tail_raised = stats_.last_tail_raised;
    out.bound = shared_.rounded_bound(std::max(v.before_relaxation, out.relaxation));
    if (relaxations_.root_order_stage() >= 0) {
      out.device = inst_.stages[static_cast<std::size_t>(relaxations_.root_order_stage())].device;
      out.order = relaxations_.root_order();
    }
    // The device relaxation's order where it gave the bound (or no single-stage order exists).
    if (!device_root_.order.empty() && (out.device < 0 || device_root_.bound >= out.relaxation)) {
      out.device = device_root_.device;
      out.order = device_root_.order;
    }
    return out;
  }

  SolveResult run(const std::vector<Schedule>& warm_starts) {
    SolveResult res;
    take_warm_starts(warm_starts, res);
    lift_proven_to_incumbent();
    if (auto why = obviously_infeasible(inst_)) return stop_before_search(res, *why);
    NodePtr root = bound_root();
    // Only possible for an instance without ops, which the file format excludes.
    if (!root) return stop_before_search(res, "no decision to make");
    if (opt_.on_root_bound) opt_.on_root_bound(root_bound_);
    // Without a target, the nodes whose bounds lie below the tree's proven bound are ties, the
    // deeper first (NodePool::set_floor). With one (probing's searches, bound_probing.h) the
    // order stays best-first: there it moved the 112 V and loop instances' node counts both
    // ways and not in total (seed-17 small-loop-00 5.8k -> 1.7k, seed-13 small-v-02 4.4k ->
    // 7.1k; bench/README.md, "The nodes below the proven bound as ties").
    if (!(opt_.target < kInf)) pool_.set_floor(shared_.proven_bound(), kRelaxationTolerance);
    improve_incumbent_by_lns();
    pool_.push(std::move(root));

    stop_before_expanding();
    if (!opt_.tree) shared_.request_stop(kNoTree);
    root_stats_ = stats_;
    searched_ = true;
    search_tree();
    finish(res, true);
    hand_open_nodes_to_keep_cut();
    return res;
  }

  // Where the search keeps its cut nodes, the open ones too once it is over (a search that
  // stopped before expanding them, e.g. at a bound proven elsewhere): what it kept is then every
  // node it neither expanded nor ruled out, whatever stopped it.
  void hand_open_nodes_to_keep_cut() {
    if (!opt_.keep_cut) return;
    std::vector<NodePtr> open;
    pool_.drop_at_or_above(-kInf, &open);
    for (NodePtr& n : open) opt_.keep_cut->keep(std::move(n));
  }

  // TreeSearch::resumable.
  bool resumable() const {
    const int code = shared_.stop_code();
    return searched_ && (code == kTimeLimit || code == kNodeLimit) && pool_.size() > 0 &&
           shared_.proven_bound() < shared_.incumbent() - kTimeEps;
  }

  // TreeSearch::retargetable.
  bool retargetable() const {
    return searched_ && opt_.keep_cut && opt_.keep_cut->complete() && opt_.target < kInf &&
           !(shared_.incumbent() <= opt_.target + kTimeEps);
  }

  // TreeSearch::raise_target.
  SolveResult raise_target(double target, const ResumeOptions& limits) {
    if (!retargetable() || !(target > opt_.target)) {
      throw std::logic_error("TreeSearch::raise_target: the last part kept no complete frontier, found a schedule, or the target does not rise");
    }
    opt_.target = target;
    shared_.set_target(target);
    begin_part(limits);
    SolveResult res;
    raise_known_bound(limits.known_bound);
    pool_from(*opt_.keep_cut, opt_.keep_cut);
    stop_before_expanding();
    search_tree();
    finish(res, true);
    hand_open_nodes_to_keep_cut();
    return res;
  }

  // TreeSearch::resumable_from_frontier.
  bool resumable_from_frontier() const {
    const int code = shared_.stop_code();
    return searched_ && opt_.keep_cut && opt_.keep_cut->complete() && (code == kTimeLimit || code == kNodeLimit) &&
           shared_.incumbent() <= opt_.target + kTimeEps && shared_.proven_bound() < shared_.incumbent() - kTimeEps;
  }

  // TreeSearch::resume_from_frontier. Every node of the tree was expanded, ruled out (deadlock,
  // dominance, a twin in the transposition table, whose representative is expanded or kept) or
  // kept; a kept one at or above the incumbent's cutoff holds no better schedule.
  SolveResult resume_from_frontier(const std::vector<Schedule>& warm_starts, const ResumeOptions& limits) {
    if (!resumable_from_frontier()) {
      throw std::logic_error("TreeSearch::resume_from_frontier: the last part kept no complete frontier, found no schedule, or did not stop at a limit");
    }
    CutFrontier* frontier = opt_.keep_cut;
    opt_.keep_cut = nullptr;
    opt_.target = kInf;
    shared_.set_target(kInf);
    return go_on(warm_starts, limits, frontier);
  }

  // TreeSearch::resume: the open nodes left in the pool, the transposition table and the memos
  // are as the last part left them; each part's statistics start from the root's.
  SolveResult resume(const std::vector<Schedule>& warm_starts, const ResumeOptions& limits) {
    if (!resumable()) throw std::logic_error("TreeSearch::resume: the last part did not stop at a limit with open nodes");
    return go_on(warm_starts, limits, nullptr);
  }

 private:
  // The next part of resume() and resume_from_frontier(): the warm starts first, then the nodes
  // of `frontier` (null: none) below the incumbent's cutoff join the open ones.
  SolveResult go_on(const std::vector<Schedule>& warm_starts, const ResumeOptions& limits, CutFrontier* frontier) {
    begin_part(limits);
    SolveResult res;
    take_warm_starts(warm_starts, res);
    raise_known_bound(limits.known_bound);
    lift_proven_to_incumbent();
    if (frontier) pool_from(*frontier, nullptr);
    stop_before_expanding();
    search_tree();
    finish(res, true);
    return res;
  }

  // The nodes of `from` below the cutoff back into the pool; the others into `rest` (null: they
  // are dropped, the cutoff rules them out).
  void pool_from(CutFrontier& from, CutFrontier* rest) {
    const double cutoff = shared_.cutoff();
    for (NodePtr& n : from.take()) {
      if (n->bound < cutoff) {
        pool_.push(std::move(n));
      } else if (rest) {
        rest->keep(std::move(n));
      }
    }
  }

  // The next part's limits (resume, raise_target): nothing beside the tree, the statistics from
  // the root's again.
  void begin_part(const ResumeOptions& limits) {
    opt_.time_limit = limits.time_limit;
    opt_.node_limit = limits.node_limit;
    opt_.gap = limits.gap;
    opt_.on_progress = limits.on_progress;
    opt_.beside = {};
    shared_.begin_resume(limits.gap, limits.node_limit);
    stats_ = root_stats_;
  }

  // A bound proven elsewhere (SolveOptions::known_bound): global_bound() never reports less
  // (capped by the incumbent).
  void raise_known_bound(double b) {
    if (!opt_.neighbourhood && b > 0 && b < kInf) shared_.raise_proven(b);
  }

  // A bound proven elsewhere within the relaxations' tolerance of the incumbent proves it (a
  // single-stage relaxation returns its value less a hair; root_lower_bound's is one).
  void lift_proven_to_incumbent() {
    if (shared_.proven_bound() > 0) shared_.raise_proven(lift_to_cutoff(shared_.proven_bound(), shared_.incumbent()));
  }

  // The reasons to stop that hold before a node is expanded: no time, the caller's stop (before
  // the monitor's first look), or proven already (a known bound that meets the incumbent).
  void stop_before_expanding() {
    if (opt_.time_limit <= 0) shared_.request_stop(kTimeLimit);
    if (opt_.stop && opt_.stop->load()) shared_.request_stop(kInterrupted);
    if (shared_.incumbent() < kInf && shared_.proven_bound() >= shared_.incumbent() - kTimeEps) {
      shared_.request_stop(kProven);
    }
  }

  static const Instance& check_limits(const Instance& inst) {
    if (inst.num_stages() > ActionCodec::kMaxStages || inst.microbatches > ActionCodec::kMaxMicrobatches ||
        static_cast<int>(inst.offload_levels.size()) > ActionCodec::kMaxLevels) {
      throw std::invalid_argument("the solver handles at most 1024 stages, 16384 microbatches and 64 offload levels");
    }
    return inst;
  }

  const SearchContext& context() {
    if (!ctx_) {
      if (device_root_.device >= 0) {
        for (int st = 0; st < problem_.S; ++st) last_tails_.push_back(last_tail_choices(problem_, st));
      }
      ctx_ = std::make_unique<SearchContext>(SearchContext{.inst = inst_,
                                                           .problem = problem_,
                                                           .opt = opt_,
                                                           .codec = codec_,
                                                           .can_offload = can_offload_,
                                                           .threads = threads_,
                                                           .backend = backend_,
                                                           .max_open = max_open_,
                                                           .shared = shared_,
                                                           .pool = pool_,
                                                           .relaxations = relaxations_,
                                                           .tt = tt_.get(),
                                                           .relaxed_device = device_root_.device,
                                                           .other_relaxed_devices = other_relaxed_devices(),
                                                           .device_memo = opt_.device_memo ? opt_.device_memo : &device_memo_,
                                                           .device_tallies = &device_tallies_,
                                                           .last_tails = &last_tails_});
    }
    return *ctx_;
  }
  // The devices other than the root's best that the device relaxation applies to (none when no
  // device gave the root a bound: then the nodes ask none).
  std::vector<int> other_relaxed_devices() const {
    if (device_root_.device < 0) return {};
    std::vector<int> out = device_relaxation_devices(inst_, problem_);
    std::erase(out, device_root_.device);
    return out;
  }
  const NodeExpander& expander() {
    if (!expander_) expander_ = std::make_unique<NodeExpander>(context());
    return *expander_;
  }

  // The best valid, feasible warm start is the first incumbent.
  void take_warm_starts(const std::vector<Schedule>& warm_starts, SolveResult& res) {
    for (const Schedule& ws : warm_starts) {
      if (ws.num_devices() != inst_.num_devices() || !check_structure(inst_, ws).empty()) continue;
      const SimResult r = simulate(inst_, ws, SimOptions::quiet());
      if (!r.feasible) continue;
      const std::string origin = ws.solver.empty() ? "warm start" : ws.solver;
      if (r.makespan < res.warm_start_makespan) {
        res.warm_start_makespan = r.makespan;
        res.warm_start = origin;
      }
      shared_.offer(ws, r.makespan, origin);
    }
  }

  SolveResult& stop_before_search(SolveResult& res, const std::string& why) {
    res.status = SolveResult::Status::kInfeasible;
    res.reason = why;
    finish(res, false);
    return res;
  }

  // The root node with its bound (the node bound and the single-stage relaxation, valid for the
  // whole tree), or null when the root is no decision; sizes the pool by the root's path length.
  NodePtr bound_root() {
    SearchWorker root_worker(inst_);
    root_worker.sim.start_open();
    const Simulator::Step step = root_worker.sim.advance();
    if (step.kind != Simulator::Step::Kind::kDecision) return nullptr;
    auto root = std::make_unique<SearchNode>();
    const RootValues v = root_values(root_worker, step.time, std::min(shared_.incumbent(), opt_.target));
    root->bound = shared_.rounded_bound(std::max(v.before_relaxation, v.relaxation));
    root_bound_ = root->bound;
    shared_.raise_proven(root_bound_);  // valid for the whole tree, whatever its children say
    // A node costs its path (4 bytes a decision, at most one per action) plus its overhead.
    int actions = 0;
    for (int d = 0; d < inst_.num_devices(); ++d) actions += root_worker.sim.snapshot().unlisted[d];
    const double node_bytes = 96.0 + 4.0 * actions;
    max_open_ = static_cast<std::size_t>(std::clamp(opt_.pool_memory_bytes / node_bytes, 100.0, 1e8));
    ctx_.reset();  // rebuilt with the pool's size
    expander_.reset();
    return root;
  }

  // The PCIe group energy bound at the root (bounds/group_energy_bound.h), recorded in the
  // statistics; valid for the whole tree.
  double group_bound(const std::vector<double>& head) {
    if (opt_.neighbourhood) return 0;
    stats_.group_energy_bound = group_energy_bound(problem_, head);
    return stats_.group_energy_bound;
  }

  // The PCIe group forward bound at the root (bounds/group_forward_bound.h), recorded in the
  // statistics; valid for the whole tree.
  double group_forward(const std::vector<double>& head) {
    if (opt_.neighbourhood) return 0;
    stats_.group_forward_bound = group_forward_bound(problem_, head).bound;
    return stats_.group_forward_bound;
  }

  // The byte-time energy bound at the root (bounds/byte_energy_bound.h), recorded in the
  // statistics; valid for the whole tree.
  double byte_bound(const std::vector<double>& head) {
    if (opt_.neighbourhood) return 0;
    stats_.byte_energy_bound = byte_energy_bound(inst_, problem_, head);
    return stats_.byte_energy_bound;
  }

  // The device relaxations at the root (bounds/device_relaxation.h), the largest recorded in the
  // statistics; valid for the whole tree. Each gets kDeviceRelaxationNodes of the
  // kDeviceRelaxationTotalNodes that the devices before it left, and the time that
  // kDeviceRelaxationShare of the limit leaves (at most kDeviceRelaxationSeconds in all).
  // Skipped where the bounds known so far meet the cutoff, and taken from
  // SolveOptions::root_relaxation where it ran there.
  double device_bound(const std::vector<double>& head, double cutoff, double known) {
    if (opt_.neighbourhood || !opt_.device_relaxation) return 0;
    if (const RootBound* given = opt_.root_relaxation; given && given->device_relaxation_ran) {
      device_root_ = {true, given->device_relaxation, given->relaxed_device, given->device_order};
      stats_.device_pairs_raised = given->device_pairs_raised;
    } else {
      if (known >= cutoff - kTimeEps) return 0;
      device_root_ = {true, 0.0, -1, {}};
      const auto t0 = std::chrono::steady_clock::now();
      const double budget = std::min(kDeviceRelaxationSeconds, kDeviceRelaxationShare * opt_.time_limit);
      // Past the first device that finished, only a larger value counts: the others stop at
      // their first relaxed schedule at most it (seed-13 small-v-05 of random_small.py: device
      // 1's search ran its 2M nodes, 0.41 s, where device 0 had given 30.96 in 76). So the
      // device with the largest value should come first: a short search of each guesses it by
      // the best relaxed schedule it meets (its value where it finishes; they are kept then).
      // Seed-7 small-v-06: device 1 was solved exactly (39.87 ms, 714k nodes) before device 2
      // gave 40.21; now device 2 comes first and device 1 stops at 73k. All root searches of
      // the 109 V/loop instances of seven seeds: 2.06M -> 1.49M nodes, the same bounds.
      std::vector<DeviceRelaxation> guess(static_cast<std::size_t>(inst_.num_devices()));
      std::vector<int> order = device_relaxation_devices(inst_, problem_);
      for (const int d : order) {
        guess[static_cast<std::size_t>(d)] = device_relaxation(inst_, problem_, d, head, cutoff, kDeviceGuessNodes);
        stats_.device_relaxation_nodes += guess[static_cast<std::size_t>(d)].nodes;
      }
      const auto value = [&](int d) {
        const DeviceRelaxation& g = guess[static_cast<std::size_t>(d)];
        return g.finished ? g.bound : g.upper;  // (no relaxed schedule met: infinity, first)
      };
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return value(a) > value(b); });
      for (const int d : order) {
        if (opt_.stop && opt_.stop->load()) break;  // Ctrl-C: what finished so far
        DeviceRelaxation& g = guess[static_cast<std::size_t>(d)];
        if (g.finished) {
          if (g.bound > device_root_.bound) device_root_ = {true, g.bound, d, std::move(g.order)};
          continue;
        }
        const double left = budget - std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const std::int64_t nodes = std::min(kDeviceRelaxationNodes, kDeviceRelaxationTotalNodes - stats_.device_relaxation_nodes);
        if (!(left > 0) || nodes <= 0) break;
        const double floor = device_root_.device >= 0 ? device_root_.bound : -kInf;
        DeviceRelaxation r = device_relaxation(inst_, problem_, d, head, cutoff, nodes, left, true, false, floor);
        stats_.device_relaxation_nodes += r.nodes;
        if (r.finished && r.bound > device_root_.bound) device_root_ = {true, r.bound, d, std::move(r.order)};
      }
      device_pairs(head, cutoff, budget - std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    stats_.device_relaxation_bound = device_root_.bound;
    stats_.device_relaxation_device = device_root_.device;
    return lift_to_cutoff(device_root_.bound, cutoff);
  }

  // The best device's relaxation again with the pair releases (bounds/device_relaxation.h), with
  // at most kDevicePairNodes of the nodes and the time the first pass left, where that found a
  // relaxed schedule below the cutoff (where it did not, it proved the cutoff already): a bound
  // the pairs may raise (small-v-02 of bench/solvers/random_small.py: 43.57 -> 43.77 ms, its
  // optimum). Its order is not taken: the first pass's guides the warm starts (on small-v-04 the
  // pairs' relaxed optimum, another order of the same value, made the local search from the
  // guided start miss the optimum that the first one's finds, 0.2 -> 0.9 s).
  void device_pairs(const std::vector<double>& head, double cutoff, double seconds) {
    const int d = device_root_.device;
    const std::int64_t nodes = std::min(kDevicePairNodes, kDeviceRelaxationTotalNodes - stats_.device_relaxation_nodes);
    if (!opt_.device_pairs || d < 0 || device_root_.order.empty() || !(device_root_.bound < cutoff - kTimeEps)) return;
    if (nodes <= 0 || !(seconds > 0) || (opt_.stop && opt_.stop->load())) return;
    const DeviceRelaxation r = device_relaxation(inst_, problem_, d, head, cutoff, nodes, seconds, true, true);
    stats_.device_relaxation_nodes += r.nodes;
    if (r.finished && r.bound > device_root_.bound) {
      if (r.bound > device_root_.bound + kRelaxationTolerance) {
        stats_.device_pairs_raised = r.bound - device_root_.bound;
      }
      device_root_.bound = r.bound;
    }
  }

  // Workers in a TBB arena; a monitor thread reports progress and enforces the limits.
  void search_tree() {
    SearchMonitor monitor(shared_, pool_, opt_);
    monitor.start();
    const SearchContext& ctx = context();
    const NodeExpander& ex = expander();
    std::mutex stats_mu;
    // The search beside (SolveOptions::beside) on the last worker's thread, which then joins the
    // tree; a worker returns only when the tree is over (the pool is finished or the search
    // stops), and that stops the search beside.
    const bool beside = opt_.beside && threads_ >= 2 && !shared_.stopping();
    std::atomic<bool> tree_over{false};
    tbb::task_arena arena(threads_);
    arena.execute([&] {
      tbb::task_group group;
      for (int w = 0; w < threads_; ++w) {
        group.run([&, w] {
          if (beside && w == threads_ - 1) {
            const BesideRun r = run_beside(tree_over);
            {
              std::lock_guard<std::mutex> lock(stats_mu);
              stats_.beside_improvements = r.improvements;
              stats_.beside_seconds = r.seconds;
            }
          }
          const SolveStats s = backend_ == BoundsMode::kCpu ? DiveWorker(ctx, ex, w).run() : BatchWorker(ctx, ex, w).run();
          tree_over.store(true);
          std::lock_guard<std::mutex> lock(stats_mu);
          stats_.merge(s);
        });
      }
      group.wait();
    });
    monitor.finish();
    stats_.pruned_pool += monitor.dropped();
  }

  // ---- primal: a search beside the tree, and large neighbourhood search before it ------------

  struct BesideRun {
    std::int64_t improvements = 0;  // schedules it offered that became the incumbent
    double seconds = 0;
  };
  BesideRun run_beside(const std::atomic<bool>& tree_over) {
    BesideRun out;
    BesideTree b;
    b.stop = &tree_over;
    b.bound = &shared_.proven_bound_atomic();
    b.offer = [this, &out](const Schedule& schedule, double makespan) {
      if (!shared_.offer(schedule, makespan, "local search beside the tree")) return;
      shared_.set_seconds_to_best(shared_.seconds());
      ++out.improvements;
    };
    const auto t0 = std::chrono::steady_clock::now();
    try {
      opt_.beside(b);
    } catch (...) {  // an error beside the tree ends the search too, and reaches the caller
      shared_.request_stop(kInterrupted);
      throw;
    }
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return out;
  }

  void improve_incumbent_by_lns() {
    if (opt_.neighbourhood || opt_.lns_time_share <= 0 || !(shared_.incumbent() < kInf)) return;
    if (std::max(root_bound_, shared_.proven_bound()) >= shared_.incumbent() - kTimeEps) return;  // already proven
    LnsOptions lo;
    lo.time_limit = opt_.time_limit * opt_.lns_time_share;
    lo.stop = opt_.stop;
    lo.nodes_per_window = 3000;  // one pass over 8x32 windows: about 3 s on one core
    LnsStats ls;
    const Schedule improved = improve_by_lns(inst_, shared_.best(), lo, &ls);
    stats_.lns_repairs = ls.repairs;
    stats_.lns_improvements = ls.improvements;
    stats_.lns_nodes = ls.nodes;
    stats_.lns_seconds = ls.seconds;
    if (ls.final_makespan < ls.start_makespan - kTimeEps) {
      shared_.offer(improved, ls.final_makespan, "large neighbourhood search");
      shared_.set_seconds_to_best(shared_.seconds());
    }
    if (opt_.on_lns) opt_.on_lns(ls.seconds, ls.start_makespan, ls.final_makespan, ls.improvements);
  }

  // ---- result ------------------------------------------------------------------------------

  void set_status(SolveResult& res, double inc) {
    // Every open node is in the pool once the workers have returned.
    const bool exhausted = pool_.size() == 0;
    res.bound = global_bound(shared_, pool_);
    const std::string why = stop_text(shared_.stop_code());
    if (inc == kInf && opt_.target < kInf) {
      res.status = SolveResult::Status::kUnknown;
      res.reason = exhausted ? "no schedule of makespan at most the target (search below it exhausted)"
                             : "stopped (" + why + ") before finding a schedule at most the target";
      return;
    }
    if (inc == kInf) {
      res.status = exhausted && !opt_.neighbourhood ? SolveResult::Status::kInfeasible : SolveResult::Status::kUnknown;
      res.reason = exhausted ? "every schedule deadlocks (search space exhausted)"
                             : "stopped (" + why + ") before finding a schedule";
      return;
    }
    res.status = res.bound >= inc - kTimeEps && !opt_.neighbourhood ? SolveResult::Status::kOptimal
                                                                    : SolveResult::Status::kFeasible;
    res.reason = res.status == SolveResult::Status::kOptimal ? "proven optimal" : "stopped: " + why;
  }

  void finish(SolveResult& res, bool searched) {
    res.root_bound = root_bound_;
    res.stats = stats_;
    if (tt_) res.stats.transposition_stored = tt_->stored();
    res.stats.bounds_backend = backend_;
    res.stats.threads = threads_;
    res.stats.seconds = shared_.seconds();
    res.stats.seconds_to_best = shared_.seconds_to_best();
    const double inc = shared_.incumbent();
    if (searched) {
      set_status(res, inc);
    } else if (inc < kInf) {
      res.status = SolveResult::Status::kFeasible;
    }
    if (!(inc < kInf)) return;
    assert(res.bound <= inc + kTimeEps);
    res.makespan = inc;
    res.gap = std::max(0.0, (inc - res.bound) / inc);
    Schedule sch = shared_.best();
    const SimResult r = simulate(inst_, sch, SimOptions::quiet());
    sch.instance = inst_.name;
    sch.makespan = r.makespan;
    sch.bubble = r.bubble;
    sch.peak_memory = r.peak_memory;
    sch.status = to_string(res.status);
    sch.bound = res.bound;
    sch.gap = res.gap;
    sch.solver = "optpipe solve (" + shared_.best_origin() + ")";
    res.schedule = std::move(sch);
  }

  const Instance& inst_;
  SolveOptions opt_;
  BoundProblem problem_;
  ActionCodec codec_;
  SharedSearchState shared_;
  StageRelaxations relaxations_;
  const bool can_offload_;
  const int threads_;
  NodePool pool_;
  BoundsMode backend_ = BoundsMode::kCpu;    // resolved: kCpu (dives), kTbb or kGpu (batch workers)
  std::unique_ptr<TranspositionTable> tt_;  // null when options.transposition is off
  std::size_t max_open_ = 0;
  std::unique_ptr<SearchContext> ctx_;
  std::unique_ptr<NodeExpander> expander_;
  double root_bound_ = 0;
  // The root's device relaxations (device_bound): whether they ran, the largest finished one, its
  // device (the nodes ask it) and its order (a guide for the local search).
  struct DeviceRoot {
    bool ran = false;
    double bound = 0;
    int device = -1;
    std::vector<Action> order;
  } device_root_;
  MonotoneMemo device_memo_{kDeviceMemoKeys, kDeviceMemoBytes};  // the nodes' device relaxations
  DeviceRelaxationTallies device_tallies_{inst_.num_devices()};   // ... how often each cut
  std::vector<LastTails> last_tails_;  // [s]: for the nodes' device relaxations (SearchContext::last_tails)
  SolveStats stats_;  // the root's, then the workers' merged in
  SolveStats root_stats_;  // the root's alone: where each part's statistics start
  bool searched_ = false;  // run() got to the tree (the root was bounded and pushed)
};

}  // namespace

SolveResult solve(const Instance& instance, const std::vector<Schedule>& warm_starts, const SolveOptions& options) {
  BranchAndBound search(instance, options);
  return search.run(warm_starts);
}

class TreeSearch::Impl : public BranchAndBound {
 public:
  using BranchAndBound::BranchAndBound;
};

TreeSearch::TreeSearch(const Instance& instance, const SolveOptions& options)
    : impl_(std::make_unique<Impl>(instance, options)) {}
TreeSearch::~TreeSearch() = default;
SolveResult TreeSearch::run(const std::vector<Schedule>& warm_starts) { return impl_->run(warm_starts); }
bool TreeSearch::resumable() const { return impl_->resumable(); }
SolveResult TreeSearch::resume(const std::vector<Schedule>& warm_starts, const ResumeOptions& limits) {
  return impl_->resume(warm_starts, limits);
}
bool TreeSearch::retargetable() const { return impl_->retargetable(); }
bool TreeSearch::resumable_from_frontier() const { return impl_->resumable_from_frontier(); }
SolveResult TreeSearch::resume_from_frontier(const std::vector<Schedule>& warm_starts, const ResumeOptions& limits) {
  return impl_->resume_from_frontier(warm_starts, limits);
}
ResumeOptions part_limits(const SolveOptions& options) {
  ResumeOptions r;
  r.time_limit = options.time_limit;
  r.node_limit = options.node_limit;
  r.gap = options.gap;
  r.known_bound = options.known_bound;
  r.on_progress = options.on_progress;
  return r;
}

SolveResult TreeSearch::raise_target(double target, const ResumeOptions& limits) {
  return impl_->raise_target(target, limits);
}

RootBound root_lower_bound(const Instance& instance, double incumbent, const SolveOptions& options) {
  BranchAndBound search(instance, options);
  return search.root_bound_only(incumbent);
}

}  // namespace optpipe
