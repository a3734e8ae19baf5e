#include "search/solver.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <queue>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <unordered_map>

#include <tbb/task_arena.h>
#include <tbb/task_group.h>

#include "bounds/bound_problem.h"
#include "bounds/channel_bound.h"
#include "bounds/critical_path_bound.h"
#include "bounds/heads.h"
#include "bounds/memory_energy_bound.h"
#include "bounds/node_times.h"
#include "bounds/node_transfers.h"
#include "bounds/one_machine_bound.h"
#include "bounds/single_stage_relaxation.h"
#include "model/bytes.h"
#include "search/candidates.h"
#include "search/lns.h"
#include "search/transposition.h"
#include "model/simulator.h"
#include "model/validator.h"
#include "model/error.h"
#include "kernels/batched_bounds.h"
#include "kernels/cuda_devices.h"

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

std::optional<std::string> obviously_infeasible(const Instance& inst) {
  for (int s = 0; s < inst.num_stages(); ++s) {
    const Stage& st = inst.stages[s];
    const Device& dev = inst.devices[st.device];
    if (dev.static_memory + st.activation > dev.memory_limit + kMemoryTolerance) {
      return "no schedule can fit: stage " + std::to_string(s) + " needs static " + format_bytes(dev.static_memory) +
             " + one activation " + format_bytes(st.activation) + " = " +
             format_bytes(dev.static_memory + st.activation) + " on device " + std::to_string(st.device) +
             " > limit " + format_bytes(dev.memory_limit);
    }
  }
  return std::nullopt;
}

namespace {

using Clock = std::chrono::steady_clock;
constexpr double kInf = std::numeric_limits<double>::infinity();
// Search nodes of the single-stage relaxation per stage at the root (single_stage_root_bound),
// per call at a node (history_relaxation), and the most histories its memo keeps (up to about
// 1 KB each with 8 microbatches, so at most a few hundred MB; a search makes a few thousand
// calls a minute on offload-slow-pcie-4x8).
constexpr std::int64_t kSingleStageNodes = 200000;
constexpr std::int64_t kRelaxationNodes = 20000;
constexpr std::size_t kRelaxationMemo = 1 << 18;
// node_relaxation: search nodes per call, and entries kept per node key. A call that hits its
// limit leaves nothing to remember, so the next node with the same key asks again: a small
// limit wastes more than it saves. The offload-slow-pcie-4x8 proof (1 thread, the same tree):
// 1500 nodes a call, no proof in 90 s (51k calls unfinished); 3000, 31.8 s (3.2k unfinished);
// 12000, 17.6 s; 30000, 16.6 s (3 unfinished).
constexpr std::int64_t kNodeRelaxationNodes = 30000;
constexpr std::size_t kNodeEntriesPerKey = 16;
constexpr std::size_t kNodeMemoBytes = std::size_t{128} << 20;
// A single-stage relaxation is exact only up to its search's time tolerances (1e-9 ms a step,
// at most a few 1e-7 ms in all), so it returns its value less 1e-7 ms. A value within this
// much of the cutoff counts as reaching it: without that, a node whose relaxation equals the
// incumbent exactly (as along an optimal schedule's path) could never be cut by it. So a proof
// that rests on it holds up to 1e-6 ms, like a MILP solver's absolute gap tolerance.
constexpr double kRelaxationTolerance = 1e-6;

// v, or `cut` where v is within kRelaxationTolerance of it.
double lift_to_cutoff(double v, double cut) { return v >= cut - kRelaxationTolerance ? std::max(v, cut) : v; }

// An open node: the decisions that lead to it (each action packed in 32 bits, in the order they
// were taken) and its lower bound. Replaying the decisions on an open-list simulation, which is
// deterministic, restores its state; a path costs 4 bytes a decision where a simulator snapshot
// costs kilobytes, so the pool can hold millions of nodes.
struct Node {
  std::vector<std::uint32_t> path;
  double bound = 0;
  int depth = 0;
  double priority = 0;  // dive order at equal bounds: smaller first (see dive())
};
using NodePtr = std::unique_ptr<Node>;

struct NodeOrder {  // the pool's top is the smallest bound; ties: the deeper node
  bool operator()(const NodePtr& a, const NodePtr& b) const {
    if (a->bound != b->bound) return a->bound > b->bound;
    return a->depth < b->depth;
  }
};

enum StopCode { kNotStopped = 0, kTimeLimit, kInterrupted, kNodeLimit, kGapReached, kProven };

const char* stop_text(int code) {
  switch (code) {
    case kTimeLimit: return "time limit";
    case kInterrupted: return "interrupted";
    case kNodeLimit: return "node limit";
    case kGapReached: return "gap reached";
    case kProven: return "proven optimal";
    default: return "";
  }
}


void atomic_min(std::atomic<double>& x, double v) {
  double cur = x.load();
  while (v < cur && !x.compare_exchange_weak(cur, v)) {
  }
}

void atomic_max(std::atomic<double>& x, double v) {
  double cur = x.load();
  while (v > cur && !x.compare_exchange_weak(cur, v)) {
  }
}

// Per-worker scratch and counters.
struct Worker {
  explicit Worker(const Instance& inst) : sim(inst) {}
  Simulator sim;
  Simulator::State parent;  // the state of the node being expanded
  NodeTimes times;
  NodeTransfers transfers;                  // bound(): the node's offload decisions and transfer times
  std::vector<double> head, finish;
  std::vector<double> offload_lb, reload_lb;  // bound(): per sj, lower bounds on transfer ends
  std::vector<OneMachineJob> jobs;
  std::vector<Candidate> candidates;
  StateKey key;
  // Batch modes: the evaluator and the children waiting for their batched bounds.
  std::unique_ptr<BatchedBounds> batch;
  NodeTimesBatch nodes;  // the children's times and transfers
  std::vector<double> batch_bounds;
  std::vector<int> kept;
  SolveStats stats;
  CandidateStats candidate_stats;
};

class Search {
 public:
  Search(const Instance& inst, const SolveOptions& opt)
      : inst_(inst), opt_(opt), problem_(inst), start_(Clock::now()) {
    can_offload_ = inst.can_offload();
    threads_ = opt.threads > 0 ? opt.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    if (inst.num_stages() > 1024 || inst.microbatches > 16384 || inst.offload_levels.size() > 64) {
      throw std::invalid_argument("the solver handles at most 1024 stages, 16384 microbatches and 64 offload levels");
    }
    if (opt.neighbourhood) {
      const Neighbourhood& nb = *opt.neighbourhood;
      if (nb.guide.num_devices() != inst.num_devices() || static_cast<int>(nb.free_microbatch.size()) != inst.microbatches) {
        throw std::invalid_argument("neighbourhood: the guide or the free microbatches do not match the instance");
      }
      fixed_.resize(inst.num_devices());
      for (int d = 0; d < inst.num_devices(); ++d) {
        for (const Action& a : nb.guide.devices[d]) {
          if (!nb.free_microbatch[a.mb]) fixed_[d].push_back(a);
        }
      }
    }
    resolve_bounds_backend();
    if (opt.transposition) tt_ = std::make_unique<TranspositionTable>(can_offload_, opt.transposition_memory_bytes);
    working_bound_ = std::vector<std::atomic<double>>(static_cast<std::size_t>(threads_));
    for (auto& wb : working_bound_) wb.store(kInf);
    // A bound proven elsewhere: global_bound() never reports less (capped by the incumbent).
    if (!opt.neighbourhood && opt.known_bound > 0 && opt.known_bound < kInf) proven_bound_.store(opt.known_bound);
  }

  void offer_incumbent(const Schedule& sch, double makespan, const std::string& origin) {
    std::lock_guard<std::mutex> lock(best_mu_);
    if (makespan < incumbent_.load() - kTimeEps) {
      best_ = sch;
      best_origin_ = origin;
      incumbent_.store(makespan);
    }
  }

  // The root's bound with a cutoff of `incumbent`, without searching (root_lower_bound).
  RootBound root_bound_only(double incumbent) {
    RootBound out;
    if (obviously_infeasible(inst_)) return out;
    incumbent_.store(incumbent);
    Worker root_worker(inst_);
    root_worker.sim.start_open();
    const Simulator::Step step = root_worker.sim.advance();
    if (step.kind != Simulator::Step::Kind::kDecision) return out;
    const double b = bound(root_worker, root_worker.sim.state(), step.time);
    out.relaxation = single_stage_root_bound(root_worker, b);
    out.relaxation_ran = relaxation_ran_;
    out.relaxed_stages = relax_stages_;
    out.bound = std::max(b, out.relaxation);
    if (!root_order_.empty()) {
      out.device = inst_.stages[static_cast<std::size_t>(root_order_stage_)].device;
      out.order = root_order_;
    }
    return out;
  }

  SolveResult run(const std::vector<Schedule>& warm_starts) {
    SolveResult res;
    // Warm starts: the best valid, feasible one is the first incumbent.
    for (const Schedule& ws : warm_starts) {
      if (ws.num_devices() != inst_.num_devices() || !check_structure(inst_, ws).empty()) continue;
      SimOptions quiet;
      quiet.record_timeline = false;
      quiet.record_memory = false;
      const SimResult r = simulate(inst_, ws, quiet);
      if (!r.feasible) continue;
      const std::string origin = ws.solver.empty() ? "warm start" : ws.solver;
      if (r.makespan < res.warm_start_makespan) {
        res.warm_start_makespan = r.makespan;
        res.warm_start = origin;
      }
      offer_incumbent(ws, r.makespan, origin);
    }
    // A bound proven elsewhere within the relaxations' tolerance of the incumbent proves it (a
    // single-stage relaxation returns its value less a hair; root_lower_bound's is one).
    if (proven_bound_.load() > 0) atomic_max(proven_bound_, lift_to_cutoff(proven_bound_.load(), incumbent_.load()));
    if (auto why = obviously_infeasible(inst_)) {
      res.status = SolveResult::Status::kInfeasible;
      res.reason = *why;
      finish(res, false);
      return res;
    }
    // The root.
    Worker root_worker(inst_);
    root_worker.sim.start_open();
    const Simulator::Step step = root_worker.sim.advance();
    if (step.kind != Simulator::Step::Kind::kDecision) {
      // Only possible for an instance without ops, which the file format excludes.
      res.status = SolveResult::Status::kInfeasible;
      res.reason = "no decision to make";
      finish(res, false);
      return res;
    }
    auto root = std::make_unique<Node>();
    root->bound = bound(root_worker, root_worker.sim.state(), step.time);
    root->bound = std::max(root->bound, single_stage_root_bound(root_worker, root->bound));
    root_bound_ = root->bound;
    atomic_max(proven_bound_, root_bound_);  // valid for the whole tree, whatever its children say
    // A node costs its path (4 bytes a decision, at most one per action) plus its overhead.
    int actions = 0;
    for (int d = 0; d < inst_.num_devices(); ++d) actions += root_worker.sim.state().unlisted[d];
    const double node_bytes = 96.0 + 4.0 * actions;
    max_open_ = static_cast<std::size_t>(std::clamp(opt_.pool_memory_bytes / node_bytes, 100.0, 1e8));
    if (opt_.on_root_bound) opt_.on_root_bound(root_bound_);
    improve_incumbent_by_lns();
    push(std::move(root));

    // Workers in a TBB arena; a monitor thread reports progress and enforces the limits.
    if (opt_.time_limit <= 0) request_stop(kTimeLimit);
    // Proven before the search (a known bound that meets the incumbent): nothing to expand.
    if (incumbent_.load() < kInf && proven_bound_.load() >= incumbent_.load() - kTimeEps) request_stop(kProven);
    std::thread monitor([&] { monitor_loop(); });
    tbb::task_arena arena(threads_);
    arena.execute([&] {
      tbb::task_group group;
      for (int w = 0; w < threads_; ++w) group.run([&, w] { work(w); });
      group.wait();
    });
    {
      std::lock_guard<std::mutex> lock(done_mu_);
      done_ = true;
    }
    done_cv_.notify_all();
    monitor.join();
    finish(res, true);
    return res;
  }

 private:
  // ---- the single-stage relaxation at the root (bounds/single_stage_relaxation.h) -------

  // The largest single-stage relaxation bound over the stages it applies to, with the root's
  // heads (in w.head after bound()); 0 when none applies, none finishes within its budget, or
  // the root's bound already meets the incumbent. It only raises the root bound, so it gets a
  // small share of the time limit: 5%, at most 2 s, over all stages.
  double single_stage_root_bound(const Worker& w, double root_bound) {
    const double cutoff = incumbent_.load();
    // Nothing to gain where the cheap bounds or a bound proven elsewhere (known_bound) already
    // meet the incumbent.
    if (opt_.neighbourhood || !opt_.stage_relaxation || std::max(root_bound, proven_bound_.load()) >= cutoff - kTimeEps) {
      return 0.0;
    }
    relaxation_ran_ = true;
    if (const RootBound* given = opt_.root_relaxation; given && given->relaxation_ran) {
      // Computed before (root_lower_bound): valid for any cutoff, and its finished stages are
      // the ones that finish here.
      relax_stages_ = given->relaxed_stages;
      stats_.single_stage_bound = lift_to_cutoff(given->relaxation, cutoff);
      return stats_.single_stage_bound;
    }
    const double budget = std::min(2.0, 0.05 * opt_.time_limit);
    const auto t0 = std::chrono::steady_clock::now();
    auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
    double best = 0.0;
    for (int s = 0; s < problem_.S && elapsed() < budget; ++s) {
      // The first stage under the spec's start rules where they apply (stronger, and its search
      // is no larger on offload-slow-pcie-4x8: 68k nodes against 99k).
      const SingleStageRelaxation r = single_stage_relaxation(inst_, problem_, s, w.head, cutoff, kSingleStageNodes,
                                                              budget - elapsed(), true, rules_for(s),
                                                              opt_.pair_releases);
      stats_.single_stage_nodes += r.nodes;
      if (!r.finished) continue;
      if (!r.order.empty() && (root_order_.empty() || r.bound > best)) {
        root_order_ = r.order;
        root_order_stage_ = s;
      }
      best = std::max(best, lift_to_cutoff(r.bound, cutoff));
      // At the nodes, only where offloads make the tree hard, and only the stages whose search
      // finished here: one too big at the root would cost every node its whole node limit.
      if (inst_.can_offload()) relax_stages_.push_back(s);
    }
    stats_.single_stage_bound = best;
    stats_.single_stage_seconds = elapsed();
    return best;
  }

  // The start rules of stage s's relaxation at the root and from its history: the spec's for the
  // first stage where they apply (SolveOptions::spec_start_rules), else the free model.
  StartRules rules_for(int s) const {
    return opt_.spec_start_rules ? strongest_start_rules(inst_, problem_, s) : StartRules::kFree;
  }

  // The largest single-stage relaxation of the histories of the node in w (its times and
  // transfers, after bound()), each from the memo when a node with the same history of that
  // stage asked before (bounds/single_stage_relaxation.h: the history-only relaxation
  // depends on nothing else, and a value proven for one cutoff stays a valid bound for any).
  // An unfinished search counts as 0 and is not tried again.
  double history_relaxation(Worker& w) {
    double best = 0;
    const double cut = cutoff();
    // Asked a little above the cutoff: the relaxation returns its value less a hair.
    const double ask = cut + kRelaxationTolerance;
    for (int s : relax_stages_) {
      std::vector<double> key = single_stage_history_key(inst_, problem_, s, w.times, w.transfers);
      key.push_back(static_cast<double>(s));
      {
        std::lock_guard<std::mutex> lock(relax_mu_);
        auto it = relax_memo_.find(key);
        if (it != relax_memo_.end()) {
          ++w.stats.relaxation_hits;
          best = std::max(best, lift_to_cutoff(it->second, cut));
          if (best >= cut) return best;
          continue;
        }
      }
      // The first stage under the spec's own start rules: stronger, and still a bound for every
      // node with the history (single_stage_relaxation.h).
      const StartRules rules = rules_for(s);
      const bool spec = rules == StartRules::kSpecFirstStage;
      const SingleStageRelaxation r =
          single_stage_relaxation_of_history(inst_, problem_, s, w.times, w.transfers, ask, kRelaxationNodes, rules);
      w.stats.single_stage_nodes += r.nodes;
      ++w.stats.relaxation_calls;
      if (spec) ++w.stats.spec_rule_calls;
      if (!r.finished) ++w.stats.relaxation_unfinished;
      const double v = r.finished ? r.bound : 0.0;
      {
        std::lock_guard<std::mutex> lock(relax_mu_);
        if (relax_memo_.size() < kRelaxationMemo) relax_memo_.emplace(std::move(key), v);
      }
      best = std::max(best, lift_to_cutoff(v, cut));
      if (best >= cut) return best;
    }
    return best;
  }

  // The largest single-stage relaxation of the node in w with its own heads, free times and
  // makespan so far (single_stage_relaxation_at_node: stronger than the history's, but no two
  // nodes ask the same question). Answered from the memo where it can: among nodes with the
  // same node key, the relaxation is non-decreasing in the params (single_stage_node_params), so
  // a node whose params are no smaller than one already solved is worth at least its value, and
  // one whose params are no larger than one whose exact value is below the cutoff cannot reach
  // it (no search then).
  double node_relaxation(Worker& w) {
    double best = 0;
    const double cut = cutoff();
    const double ask = cut + kRelaxationTolerance;  // as in history_relaxation
    for (int s : relax_stages_) {
      std::vector<double> key = single_stage_node_key(inst_, problem_, s, w.times, w.transfers);
      key.push_back(static_cast<double>(s));
      std::vector<double> params = single_stage_node_params(inst_, problem_, s, w.times, w.transfers, w.head);
      double known = 0;
      bool hopeless = false;
      {
        std::lock_guard<std::mutex> lock(relax_mu_);
        auto it = node_memo_.find(key);
        if (it != node_memo_.end()) {
          for (const NodeEntry& e : it->second.list) {
            if (e.value > known && no_larger(e.params, params)) known = e.value;
            if (e.exact && e.value < cut - kRelaxationTolerance && no_larger(params, e.params)) hopeless = true;
          }
        }
      }
      if (known > 0 || hopeless) {
        ++w.stats.node_relaxation_hits;
        best = std::max(best, lift_to_cutoff(known, cut));
        if (best >= cut) return best;
        if (hopeless) continue;
      }
      const SingleStageRelaxation r = single_stage_relaxation_at_node(inst_, problem_, s, w.times, w.transfers, w.head,
                                                                      ask, kNodeRelaxationNodes);
      w.stats.single_stage_nodes += r.nodes;
      ++w.stats.node_relaxation_calls;
      if (!r.finished) {
        ++w.stats.relaxation_unfinished;
        continue;
      }
      {
        std::lock_guard<std::mutex> lock(relax_mu_);
        // Within its memory budget: about (params + 64) bytes an entry.
        const std::size_t cap = kNodeMemoBytes / (params.size() * sizeof(double) + 64);
        auto it = node_memo_.find(key);
        if (it == node_memo_.end() && node_memo_entries_ < cap && node_memo_.size() < kRelaxationMemo) {
          it = node_memo_.emplace(std::move(key), NodeEntries{}).first;
        }
        if (it != node_memo_.end() && node_memo_entries_ < cap) {
          NodeEntries& entries = it->second;
          NodeEntry e{std::move(params), r.bound, r.exact};
          if (entries.list.size() < kNodeEntriesPerKey) {
            entries.list.push_back(std::move(e));
            ++node_memo_entries_;
          } else {
            entries.list[entries.next++ % kNodeEntriesPerKey] = std::move(e);
          }
        }
      }
      best = std::max(best, lift_to_cutoff(r.bound, cut));
      if (best >= cut) return best;
    }
    return best;
  }

  static bool no_larger(const std::vector<double>& a, const std::vector<double>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t k = 0; k < a.size(); ++k) {
      if (a[k] > b[k] + kTimeEps) return false;
    }
    return true;
  }

  struct NodeEntry {
    std::vector<double> params;
    double value;
    bool exact;  // the relaxation's optimum (else only a lower bound on it)
  };
  struct NodeEntries {
    std::vector<NodeEntry> list;
    std::size_t next = 0;  // the slot a full list recycles next
  };

  struct KeyHash {
    std::size_t operator()(const std::vector<double>& k) const {
      std::size_t h = 1469598103934665603ull;
      for (double x : k) {
        std::uint64_t bits;
        std::memcpy(&bits, &x, sizeof bits);
        h = (h ^ bits) * 1099511628211ull;
      }
      return h;
    }
  };

  // ---- primal: large neighbourhood search before the tree ------------------------------------

  void improve_incumbent_by_lns() {
    if (opt_.neighbourhood || opt_.lns_time_share <= 0 || !(incumbent_.load() < kInf)) return;
    if (std::max(root_bound_, proven_bound_.load()) >= incumbent_.load() - kTimeEps) return;  // already proven
    LnsOptions lo;
    lo.time_limit = opt_.time_limit * opt_.lns_time_share;
    lo.stop = opt_.stop;
    lo.nodes_per_window = 3000;  // one pass over 8x32 windows: about 3 s on one core
    LnsStats ls;
    Schedule start;
    {
      std::lock_guard<std::mutex> lock(best_mu_);
      start = best_;
    }
    const Schedule improved = improve_by_lns(inst_, start, lo, &ls);
    stats_.lns_repairs = ls.repairs;
    stats_.lns_improvements = ls.improvements;
    stats_.lns_nodes = ls.nodes;
    stats_.lns_seconds = ls.seconds;
    if (ls.final_makespan < ls.start_makespan - kTimeEps) {
      offer_incumbent(improved, ls.final_makespan, "large neighbourhood search");
      seconds_to_best_ = seconds();
    }
    if (opt_.on_lns) opt_.on_lns(ls.seconds, ls.start_makespan, ls.final_makespan, ls.improvements);
  }

  // ---- node paths ---------------------------------------------------------------------------

  // An action in 32 bits: type (2) | offload level index (6) | stage (10) | microbatch (14).
  std::uint32_t encode(const Action& a) const {
    std::uint32_t level = 0;
    for (std::size_t i = 0; i < inst_.offload_levels.size(); ++i) {
      if (inst_.offload_levels[i] == a.r) level = static_cast<std::uint32_t>(i);
    }
    return (static_cast<std::uint32_t>(a.type) << 30) | (level << 24) | (static_cast<std::uint32_t>(a.stage) << 14) |
           static_cast<std::uint32_t>(a.mb);
  }
  Action decode(std::uint32_t x) const {
    Action a;
    a.type = static_cast<OpType>(x >> 30);
    a.r = inst_.offload_levels[(x >> 24) & 63u];
    a.stage = static_cast<int>((x >> 14) & 1023u);
    a.mb = static_cast<int>(x & 16383u);
    return a;
  }

  // Puts w.sim at node n's decision by replaying its path; returns that decision.
  Simulator::Step replay(Worker& w, const Node& n) {
    w.sim.start_open();
    Simulator::Step step = w.sim.advance();
    for (std::uint32_t x : n.path) {
      w.sim.append(step.device, decode(x));
      step = w.sim.advance();
    }
    return step;
  }

  // ---- bounds ------------------------------------------------------------------------------

  // max(critical path, one machine per device, one machine per PCIe channel, memory energy), on
  // heads that include the memory precedences and the node's offload decisions (bounds/).
  double bound(Worker& w, const Simulator::State& st, double t) {
    fill_times(st, t, w.times);
    fill_node_transfers(problem_, st, t, w.transfers);
    compute_heads(problem_, w.times, w.head, w.finish, &w.transfers, &w.offload_lb, &w.reload_lb);
    ++w.stats.bound_calls;
    // Cheapest first; once one reaches the cutoff the node is cut whatever the others say, so
    // they are skipped (the value returned is then still a valid bound, and >= the cutoff).
    const double cut = cutoff();
    const double cp = critical_path_bound(problem_, w.times, w.finish);
    const double om = one_machine_bound(problem_, w.head, w.jobs);
    if (std::max(cp, om) >= cut) {
      ++(cp >= om ? w.stats.critical_path_best : w.stats.one_machine_best);
      return std::max(cp, om);
    }
    const double ch = can_offload_ ? channel_bound(problem_, w.transfers, w.finish, w.reload_lb, w.jobs) : 0.0;
    const double me =
        memory_energy_bound(problem_, w.times, &w.transfers, w.head, w.finish, w.offload_lb, std::max({cp, om, ch}));
    if (me > std::max({cp, om, ch})) {
      ++w.stats.memory_best;
    } else if (ch > std::max(cp, om)) {
      ++w.stats.channel_best;
    } else if (cp >= om) {
      ++w.stats.critical_path_best;
    } else {
      ++w.stats.one_machine_best;
    }
    return std::max({cp, om, ch, me});
  }

  void fill_times(const Simulator::State& st, double t, NodeTimes& out) const { fill_node_times(problem_, st, t, out); }

  // ---- the pool ----------------------------------------------------------------------------

  void push(NodePtr n) {
    std::lock_guard<std::mutex> lock(pool_mu_);
    pool_.push(std::move(n));
  }

  // The open node with the smallest bound, or nullptr. Marks the worker busy with its bound.
  NodePtr pop(int w) {
    std::lock_guard<std::mutex> lock(pool_mu_);
    if (pool_.empty()) return nullptr;
    NodePtr n = std::move(const_cast<NodePtr&>(pool_.top()));
    pool_.pop();
    working_bound_[w].store(n->bound);
    ++busy_;
    return n;
  }

  void release(int w) {
    std::lock_guard<std::mutex> lock(pool_mu_);
    working_bound_[w].store(kInf);
    --busy_;
  }

  // Proven lower bound on the optimum: the smallest bound of the open nodes, of the subtrees
  // being explored, and of nodes cut only because of the gap tolerance; capped by the incumbent.
  // A bound once proven stays proven: the result is the largest seen (children's raw bounds can
  // be below their parent's, so the current minimum can dip; see dive()).
  double global_bound() {
    double b = incumbent_.load();
    {
      std::lock_guard<std::mutex> lock(pool_mu_);
      if (!pool_.empty()) b = std::min(b, pool_.top()->bound);
      for (const auto& wb : working_bound_) b = std::min(b, wb.load());
    }
    b = std::min(b, gap_cut_bound_.load());
    double seen = proven_bound_.load();
    while (b > seen && !proven_bound_.compare_exchange_weak(seen, b)) {
    }
    return std::min(std::max(b, seen), incumbent_.load());
  }

  // A node can only improve the incumbent by more than the gap tolerance if its bound is below
  // this.
  double cutoff() const {
    const double inc = incumbent_.load();
    return inc == kInf ? kInf : inc * (1.0 - opt_.gap) - kTimeEps;
  }

  bool stopping() const { return stop_.load(std::memory_order_relaxed); }
  void request_stop(int code) {
    int none = kNotStopped;
    stop_code_.compare_exchange_strong(none, code);
    stop_.store(true);
  }

  // ---- workers -----------------------------------------------------------------------------

  // No open node is left and no worker holds one: the search is over. Otherwise waits a moment
  // (another worker may still add nodes) and says no.
  bool search_finished() {
    {
      std::lock_guard<std::mutex> lock(pool_mu_);
      if (pool_.empty() && busy_ == 0) return true;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    return false;
  }

  void work(int w) {
    Worker worker(inst_);
    if (batch_backend_ != "cpu") {
      worker.batch = make_batch_bounds();
      batch_loop(worker, w);
      std::lock_guard<std::mutex> lock(stats_mu_);
      merge(worker);
      return;
    }
    while (!stopping()) {
      NodePtr n = pop(w);
      if (!n) {
        if (search_finished()) break;
        continue;
      }
      dive(worker, std::move(n), w);
      release(w);
    }
    std::lock_guard<std::mutex> lock(stats_mu_);
    merge(worker);
  }

  // Depth-first from n: expand, keep the most promising child, send its siblings to the pool.
  // Each node's bound is valid for its own subtree; bounds need not grow along a path, so the
  // bound the worker reports for what it holds is the running minimum over its dive (it may
  // understate, never overstate). Keeping children's raw bounds (rather than raising them to
  // their parent's) orders the pool better: v-4x8 is proven in about a second this way, not at
  // all in 10 s with raised bounds, which tie.
  void dive(Worker& w, NodePtr n, int wi) {
    Simulator::Step step = replay(w, *n);
    std::vector<NodePtr> children;
    std::vector<Action> actions;
    while (n && !stopping()) {
      if (n->bound >= cutoff()) {
        note_cut(n->bound);
        ++w.stats.pruned_bound;
        return;
      }
      count_node(w, n->depth);
      expand(w, *n, step, children, actions);
      if (children.empty()) return;
      // The dive follows the smallest bound; at equal bounds a list-scheduling rule: the child
      // whose action can start first, B before W before R before F at equal times. (Following
      // the rule first was tried: it proved v-4x8 no more, and found no better leaves elsewhere.)
      std::vector<std::size_t> order(children.size());
      for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        if (children[a]->bound != children[b]->bound) return children[a]->bound < children[b]->bound;
        return children[a]->priority < children[b]->priority;
      });
      if (pool_size() > max_open_) {
        // The pool is full: finish these children depth-first here, keeping them out of it.
        std::vector<NodePtr> stack;
        for (auto it = order.rbegin(); it != order.rend(); ++it) stack.push_back(std::move(children[*it]));
        local_dfs(w, stack);
        return;
      }
      for (std::size_t k = 1; k < order.size(); ++k) push(std::move(children[order[k]]));
      // Continue with the best child: re-run its decision from the parent's state.
      w.sim.restore(w.parent);
      w.sim.append(step.device, actions[order[0]]);
      step = w.sim.advance();
      n = std::move(children[order[0]]);
      working_bound_[wi].store(std::min(working_bound_[wi].load(), n->bound));
      children.clear();
      actions.clear();
    }
    if (n) push(std::move(n));  // stopped mid-dive: keep it open for the bound
  }

  // Explores the subtrees of `stack` (its top is explored first) depth-first without the pool;
  // when stopped, what is left goes back to the pool so that the bound stays proven.
  void local_dfs(Worker& w, std::vector<NodePtr>& stack) {
    std::vector<NodePtr> children;
    std::vector<Action> actions;
    while (!stack.empty()) {
      if (stopping()) {
        for (auto& n : stack) push(std::move(n));
        stack.clear();
        return;
      }
      NodePtr n = std::move(stack.back());
      stack.pop_back();
      if (n->bound >= cutoff()) {
        note_cut(n->bound);
        ++w.stats.pruned_bound;
        continue;
      }
      count_node(w, n->depth);
      const Simulator::Step step = replay(w, *n);
      expand(w, *n, step, children, actions);
      std::sort(children.begin(), children.end(), [](const NodePtr& a, const NodePtr& b) {
        return a->bound > b->bound;  // the best child last, on top of the stack
      });
      for (auto& c : children) stack.push_back(std::move(c));
      children.clear();
      actions.clear();
    }
  }

  void count_node(Worker& w, int depth) {
    ++w.stats.nodes;
    auto& by_depth = w.stats.nodes_by_depth;
    if (static_cast<int>(by_depth.size()) <= depth) by_depth.resize(static_cast<std::size_t>(depth) + 1, 0);
    ++by_depth[static_cast<std::size_t>(depth)];
    const std::int64_t k = ++nodes_;
    if (opt_.node_limit >= 0 && k >= opt_.node_limit) request_stop(kNodeLimit);
  }

  std::size_t pool_size() {
    std::lock_guard<std::mutex> lock(pool_mu_);
    return pool_.size();
  }

  // Branches at node n, whose state is in w.sim at decision `step`: appends `children` (with
  // their bounds) and, in `actions`, the action each one appends. Leaves update the incumbent;
  // dead or bounded-out children are dropped. Leaves w.parent = n's state.
  void expand(Worker& w, const Node& n, const Simulator::Step& step, std::vector<NodePtr>& children,
              std::vector<Action>& actions) {
    w.parent = w.sim.state();
    // Heads of this node for candidate ordering and rule 2.
    fill_times(w.parent, step.time, w.times);
    compute_heads(problem_, w.times, w.head, w.finish);
    branch_candidates(inst_, problem_, w.parent, step.device, step.time, w.head, !can_offload_ && fixed_.empty(),
                      w.candidates, w.candidate_stats);
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
        ++w.stats.leaves;
        const double makespan = w.sim.state().makespan;
        if (makespan < incumbent_.load() - kTimeEps) {
          Schedule sch;
          sch.instance = inst_.name;
          sch.devices = w.sim.state().owned.devices;
          std::lock_guard<std::mutex> lock(best_mu_);
          if (makespan < incumbent_.load() - kTimeEps) {
            best_ = std::move(sch);
            best_origin_ = "branch-and-bound";
            incumbent_.store(makespan);
            ++w.stats.incumbent_updates;
            seconds_to_best_ = seconds();
          }
        }
        continue;
      }
      if (doomed(w.sim.state())) {
        ++w.stats.pruned_deadlock;
        continue;
      }
      // Duplicates first: a node whose twin (or a node dominating it) was generated before has
      // nothing to add, and the table's test costs less than the bound. A node stored here and
      // then cut by its bound still covers its twins: their subtrees are cut by the same bound.
      if (tt_) {
        build_state_key(problem_, w.sim.state(), can_offload_, w.key);
        if (tt_->dominated_or_insert(w.key)) {
          ++w.stats.pruned_transposition;
          continue;
        }
      }
      double b;
      if (w.batch) {
        b = bound_outside_batch(w, w.sim.state(), next.time);
      } else {
        const auto t0 = std::chrono::steady_clock::now();
        b = bound(w, w.sim.state(), next.time);
        w.stats.bound_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      }
      if (b >= cutoff()) {
        note_cut(b);
        ++w.stats.pruned_bound;
        drop_batch_entry(w);
        continue;
      }
      if (!w.batch && !relax_stages_.empty()) {
        b = std::max(b, history_relaxation(w));
        // With the node's own heads only from a quarter of the decisions on: nearer the root
        // they seldom cut, and each costs a search (node_relaxation).
        const std::size_t from_depth = problem_.S * problem_.m * problem_.types / 4;
        if (b < cutoff() && n.path.size() + 1 >= from_depth) b = std::max(b, node_relaxation(w));
        if (b >= cutoff()) {
          note_cut(b);
          ++w.stats.pruned_bound;
          ++w.stats.pruned_relaxation;
          continue;
        }
      }
      auto child = std::make_unique<Node>();
      child->path.reserve(n.path.size() + 1);
      child->path = n.path;
      child->path.push_back(encode(c.action));
      child->bound = b;
      child->depth = n.depth + 1;
      static constexpr double kTypeRank[] = {3, 0, 1, 2};  // F, B, W, R
      child->priority = c.earliest_start + 1e-6 * kTypeRank[static_cast<int>(c.action.type)];
      children.push_back(std::move(child));
      actions.push_back(c.action);
    }
  }

  // In a neighbourhood search: drops the candidates of fixed microbatches other than the next
  // fixed action of the device's guide list. (Rule 2 is off there: it could cut the only
  // candidate the neighbourhood allows.)
  void keep_neighbourhood(const Simulator::State& st, int d, std::vector<Candidate>& cands) const {
    const auto& free_mb = opt_.neighbourhood->free_microbatch;
    std::size_t k = 0;
    for (const Action& a : st.owned.devices[d]) k += free_mb[a.mb] ? 0 : 1;
    const Action* expected = k < fixed_[d].size() ? &fixed_[d][k] : nullptr;
    std::erase_if(cands, [&](const Candidate& c) {
      return !free_mb[c.action.mb] && !(expected && c.action == *expected);
    });
  }

  // ---- batch modes (kernels/batched_bounds.h) -------------------------------------------------

  void resolve_bounds_backend() {
    switch (opt_.bounds) {
      case BoundsMode::kCpu: batch_backend_ = "cpu"; break;
      case BoundsMode::kTbb: batch_backend_ = "tbb"; break;
      case BoundsMode::kGpu: batch_backend_ = "cuda"; break;
      case BoundsMode::kAuto: batch_backend_ = query_cuda_devices().devices.empty() ? "tbb" : "cuda"; break;
    }
    if (batch_backend_ != "cpu") {
      try {
        make_batch_bounds();  // fails here, with its reason, when the backend is not there
      } catch (const std::runtime_error& e) {
        throw InputError(e.what());
      }
    }
  }

  std::unique_ptr<BatchedBounds> make_batch_bounds() const {
    // A batch holds the children of up to batch_size lanes: about 8 each.
    const int lanes = opt_.batch_size > 0 ? opt_.batch_size : 1024;
    return batch_backend_ == "cuda" ? make_cuda_bounds(problem_, 8 * lanes) : make_tbb_bounds(problem_);
  }

  // Batch modes: adds the child whose state is `st` to the worker's batch by its times and
  // transfers; the batch computes its heads and whole bound (kernels/batched_bounds.h, the value
  // of bound() for a node that is not cut), which batch_loop combines. Returns what the CPU has
  // for free: the makespan so far (a valid bound on its own, for the early prune in expand).
  double bound_outside_batch(Worker& w, const Simulator::State& st, double t) {
    fill_times(st, t, w.times);
    fill_node_transfers(problem_, st, t, w.transfers);
    ++w.stats.bound_calls;
    w.nodes.add(w.times, &w.transfers);
    return w.times.makespan_so_far;
  }

  // Batch modes: forgets the last child added to the batch (cut before the batch ran).
  void drop_batch_entry(Worker& w) const {
    if (!w.batch) return;
    w.nodes.pop_back(problem_);
  }

  // Pops up to `k` open nodes (smallest bounds first). The worker becomes busy unless it already
  // is (`held`), and its working bound drops to the smallest bound it holds (`held_min`, the
  // bound of what it held before, or infinity).
  std::vector<NodePtr> pop_many(int w, std::size_t k, bool held, double held_min) {
    std::vector<NodePtr> out;
    std::lock_guard<std::mutex> lock(pool_mu_);
    while (out.size() < k && !pool_.empty()) {
      out.push_back(std::move(const_cast<NodePtr&>(pool_.top())));
      pool_.pop();
    }
    if (!out.empty()) {
      working_bound_[w].store(std::min(held_min, out.front()->bound));
      if (!held) ++busy_;
    }
    return out;
  }

  // Best-first in batches, with dives: the worker holds a set of lanes, each a depth-first dive.
  // Every round expands every lane (the CPU simulates the children), bounds all their children
  // in one batch (heads and the four bounds, kernels/batched_bounds.h), keeps those below the
  // cutoff, continues each lane with its best kept child (smallest bound, then the dive's
  // list-scheduling priority) and sends the other kept children to the pool. Lanes that end (a
  // leaf, or every child cut) are refilled from the worker's own stack, then best-first from
  // the pool. The lane count adapts to the tree: the pool's share per worker, at least 1 and
  // at most the batch size (narrow tree: small batches; wide: up to 1024 lanes), and it starts
  // at 1 and doubles each round in which a dive ended: the first dive reaches a leaf after about
  // one pass over the ops (an incumbent when there was none), not after lanes x depth nodes of
  // lockstep dives. When the pool
  // is full (max_open_), siblings stay on the worker's stack instead, as in dive().
  void batch_loop(Worker& w, int wi) {
    std::vector<NodePtr> lanes, next_lanes, children, pending, stack;
    std::vector<Action> actions;
    std::vector<std::size_t> first_child;  // pending[first_child[k] .. first_child[k + 1]) are lane k's
    bool held = false;
    auto min_bound = [](const std::vector<NodePtr>& v, double b) {
      for (const auto& n : v) b = std::min(b, n->bound);
      return b;
    };
    std::size_t ramp = 1;  // doubles whenever a dive ends, so that the first dives reach leaves soon
    while (!stopping()) {
      const std::size_t cap = opt_.batch_size > 0 ? static_cast<std::size_t>(opt_.batch_size) : 1024;
      const std::size_t want =
          std::clamp<std::size_t>(pool_size() / static_cast<std::size_t>(threads_), 1, std::min(cap, ramp));
      while (lanes.size() < want && !stack.empty()) {
        lanes.push_back(std::move(stack.back()));
        stack.pop_back();
      }
      if (lanes.size() < want) {
        std::vector<NodePtr> taken = pop_many(wi, want - lanes.size(), held, min_bound(stack, min_bound(lanes, kInf)));
        if (!taken.empty()) held = true;
        for (auto& n : taken) lanes.push_back(std::move(n));
      }
      if (lanes.empty()) {
        if (held) release(wi);
        held = false;
        if (search_finished()) break;
        continue;
      }
      w.nodes.clear();
      pending.clear();
      first_child.assign(1, 0);
      for (auto& n : lanes) {
        if (!stopping() && n->bound < cutoff()) {
          count_node(w, n->depth);
          const Simulator::Step step = replay(w, *n);
          expand(w, *n, step, children, actions);  // children carry their makespans so far
          for (auto& c : children) pending.push_back(std::move(c));
          children.clear();
          actions.clear();
        } else if (!stopping()) {
          note_cut(n->bound);
          ++w.stats.pruned_bound;
          n.reset();
        }
        first_child.push_back(pending.size());
      }
      if (stopping()) break;  // the lanes (expanded or not) go back to the pool below
      if (!pending.empty()) {
        if (w.nodes.n != static_cast<int>(pending.size())) throw std::logic_error("batch out of step with its nodes");
        const auto t0 = std::chrono::steady_clock::now();
        w.batch->evaluate_times(w.nodes, w.batch_bounds);
        ++w.stats.batches;
        w.stats.batched_nodes += w.nodes.n;
        for (std::size_t i = 0; i < pending.size(); ++i) {
          pending[i]->bound = std::max(pending[i]->bound, w.batch_bounds[i]);
          w.batch_bounds[i] = pending[i]->bound;
        }
        w.batch->prune(w.batch_bounds, cutoff(), w.kept);
        w.stats.bound_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      } else {
        w.kept.clear();
      }
      // Each lane goes on with its best kept child; the other kept children go to the pool (or,
      // when it is full, to the worker's stack).
      const bool pool_full = pool_size() > max_open_;
      next_lanes.clear();
      std::size_t next_kept = 0;
      for (std::size_t k = 0; k + 1 < first_child.size(); ++k) {
        std::size_t best = pending.size();
        for (std::size_t i = first_child[k]; i < first_child[k + 1]; ++i) {
          if (next_kept < w.kept.size() && w.kept[next_kept] == static_cast<int>(i)) {
            ++next_kept;
            if (best == pending.size() || pending[i]->bound < pending[best]->bound ||
                (pending[i]->bound == pending[best]->bound && pending[i]->priority < pending[best]->priority)) {
              best = i;
            }
          } else {
            note_cut(pending[i]->bound);
            ++w.stats.pruned_bound;
            pending[i].reset();
          }
        }
        for (std::size_t i = first_child[k]; i < first_child[k + 1]; ++i) {
          if (!pending[i] || i == best) continue;
          if (pool_full) {
            stack.push_back(std::move(pending[i]));
          } else {
            push(std::move(pending[i]));
          }
        }
        if (best != pending.size()) next_lanes.push_back(std::move(pending[best]));
      }
      if (next_lanes.size() < lanes.size()) ramp = std::min<std::size_t>(2 * ramp, 1 << 20);
      lanes.swap(next_lanes);
      // Everything the worker dropped is explored or in the pool now: its working bound may rise.
      working_bound_[wi].store(min_bound(stack, min_bound(lanes, kInf)));
    }
    for (auto& n : stack) push(std::move(n));  // stopped: what is left stays open for the bound
    for (auto& n : lanes) {
      if (n) push(std::move(n));
    }
    if (held) release(wi);
  }

  // A wait that can never end, seen before the simulation gets stuck everywhere: a device whose
  // next action is an F with its inputs done but no room, while the device cannot run anything
  // else (its list is in order) and its pending offloads cannot free enough. Only offload ends
  // free memory on a device whose compute stream waits, so no continuation can start the F.
  bool doomed(const Simulator::State& st) const {
    for (int d = 0; d < problem_.D; ++d) {
      if (st.running[d]) continue;
      const auto& list = st.owned.devices[d];
      if (st.pc[d] >= static_cast<int>(list.size())) continue;
      const Action& a = list[st.pc[d]];
      if (a.type != OpType::F) continue;
      if (a.stage > 0) {
        const double e = st.end[problem_.op(0, a.stage - 1, a.mb)];
        if (!(e == e)) continue;  // inputs not done: it may still be waiting for them
      }
      const double need = inst_.stages[a.stage].activation;
      const double limit = inst_.devices[d].memory_limit + kMemoryTolerance;
      if (st.mem[d] + need <= limit) continue;
      double pending = 0;
      for (const auto& ch : st.d2h) {
        for (std::size_t k = ch.head; k < ch.queue.size(); ++k) {
          if (ch.queue[k].device == d) pending += ch.queue[k].bytes;
        }
      }
      if (st.mem[d] - pending + need > limit) return true;
    }
    return false;
  }

  // A node cut with bound b: if it was cut only thanks to the gap tolerance, the proven bound
  // must not exceed b.
  void note_cut(double b) {
    if (opt_.gap > 0 && b < incumbent_.load() - kTimeEps) atomic_min(gap_cut_bound_, b);
  }

  void merge(const Worker& w) {
    stats_.nodes += w.stats.nodes;
    stats_.single_stage_nodes += w.stats.single_stage_nodes;
    stats_.relaxation_calls += w.stats.relaxation_calls;
    stats_.spec_rule_calls += w.stats.spec_rule_calls;
    stats_.relaxation_unfinished += w.stats.relaxation_unfinished;
    stats_.node_relaxation_calls += w.stats.node_relaxation_calls;
    stats_.node_relaxation_hits += w.stats.node_relaxation_hits;
    stats_.relaxation_hits += w.stats.relaxation_hits;
    stats_.pruned_relaxation += w.stats.pruned_relaxation;
    stats_.leaves += w.stats.leaves;
    stats_.pruned_bound += w.stats.pruned_bound;
    stats_.pruned_deadlock += w.stats.pruned_deadlock;
    stats_.pruned_dominance += w.candidate_stats.dominated;
    stats_.pruned_transposition += w.stats.pruned_transposition;
    stats_.bound_seconds += w.stats.bound_seconds;
    stats_.batches += w.stats.batches;
    stats_.batched_nodes += w.stats.batched_nodes;
    stats_.bound_calls += w.stats.bound_calls;
    stats_.critical_path_best += w.stats.critical_path_best;
    stats_.one_machine_best += w.stats.one_machine_best;
    stats_.channel_best += w.stats.channel_best;
    stats_.memory_best += w.stats.memory_best;
    stats_.incumbent_updates += w.stats.incumbent_updates;
    auto& by_depth = stats_.nodes_by_depth;
    if (by_depth.size() < w.stats.nodes_by_depth.size()) by_depth.resize(w.stats.nodes_by_depth.size(), 0);
    for (std::size_t k = 0; k < w.stats.nodes_by_depth.size(); ++k) by_depth[k] += w.stats.nodes_by_depth[k];
  }

  // ---- monitoring --------------------------------------------------------------------------

  double seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

  SolveProgress progress() {
    SolveProgress p;
    p.seconds = seconds();
    p.nodes = nodes_.load();
    {
      std::lock_guard<std::mutex> lock(pool_mu_);
      p.open = static_cast<std::int64_t>(pool_.size());
    }
    p.incumbent = incumbent_.load();
    p.bound = global_bound();
    p.gap = p.incumbent == kInf ? kInf : std::max(0.0, (p.incumbent - p.bound) / p.incumbent);
    return p;
  }

  void monitor_loop() {
    double next_report = opt_.progress_interval;
    long ticks = 0;
    std::unique_lock<std::mutex> lock(done_mu_);
    while (!done_) {
      done_cv_.wait_for(lock, std::chrono::milliseconds(10));
      if (done_) break;
      const double now = seconds();
      if (now >= opt_.time_limit) request_stop(kTimeLimit);
      if (opt_.stop && opt_.stop->load()) request_stop(kInterrupted);
      const bool report = opt_.on_progress && now >= next_report;
      // Every 100 ms (or at a report): once no open node can beat the incumbent, the rest of
      // the pool would only be popped and pruned.
      if (report || ++ticks % 10 == 0) {
        const SolveProgress p = progress();
        if (p.incumbent < kInf && p.bound >= p.incumbent - kTimeEps) request_stop(kProven);
        if (opt_.gap > 0 && p.incumbent < kInf && p.gap <= opt_.gap) request_stop(kGapReached);
        if (report) {
          opt_.on_progress(p);
          next_report = now + opt_.progress_interval;
        }
      }
    }
  }

  // ---- result ------------------------------------------------------------------------------

  void finish(SolveResult& res, bool searched) {
    res.root_bound = root_bound_;
    res.stats = stats_;
    if (tt_) res.stats.transposition_stored = tt_->stored();
    res.stats.bounds_backend = batch_backend_;
    res.stats.threads = threads_;
    res.stats.seconds = seconds();
    res.stats.seconds_to_best = seconds_to_best_;
    const double inc = incumbent_.load();
    if (searched) {
      // Every open node is in the pool once the workers have returned.
      const bool exhausted = pool_.empty();
      res.bound = global_bound();
      const std::string why = stop_text(stop_code_.load());
      if (inc == kInf) {
        res.status = exhausted && !opt_.neighbourhood ? SolveResult::Status::kInfeasible : SolveResult::Status::kUnknown;
        res.reason = exhausted ? "every schedule deadlocks (search space exhausted)"
                               : "stopped (" + why + ") before finding a schedule";
      } else {
        res.status = res.bound >= inc - kTimeEps && !opt_.neighbourhood ? SolveResult::Status::kOptimal
                                                                         : SolveResult::Status::kFeasible;
        res.reason = res.status == SolveResult::Status::kOptimal ? "proven optimal" : "stopped: " + why;
      }
    } else if (inc < kInf) {
      res.status = SolveResult::Status::kFeasible;
    }
    if (inc < kInf) {
      res.makespan = inc;
      res.gap = std::max(0.0, (inc - res.bound) / inc);
      Schedule sch = best_;
      SimOptions quiet;
      quiet.record_timeline = false;
      quiet.record_memory = false;
      const SimResult r = simulate(inst_, sch, quiet);
      sch.instance = inst_.name;
      sch.makespan = r.makespan;
      sch.bubble = r.bubble;
      sch.peak_memory = r.peak_memory;
      sch.status = to_string(res.status);
      sch.bound = res.bound;
      sch.gap = res.gap;
      sch.solver = "optpipe solve (" + best_origin_ + ")";
      res.schedule = std::move(sch);
    }
  }

  const Instance& inst_;
  SolveOptions opt_;
  BoundProblem problem_;
  Clock::time_point start_;
  bool can_offload_ = false;
  std::vector<int> relax_stages_;  // stages whose relaxation the nodes use (single_stage_root_bound)
  // The order of the largest exact root relaxation's optimum, and its stage (root_bound_only).
  std::vector<Action> root_order_;
  int root_order_stage_ = -1;
  bool relaxation_ran_ = false;  // single_stage_root_bound got past its early return
  std::mutex relax_mu_;
  std::unordered_map<std::vector<double>, double, KeyHash> relax_memo_;
  std::unordered_map<std::vector<double>, NodeEntries, KeyHash> node_memo_;  // node_relaxation
  std::size_t node_memo_entries_ = 0;
  int threads_ = 1;
  std::unique_ptr<TranspositionTable> tt_;  // null when options.transposition is off
  std::string batch_backend_ = "cpu";        // cpu (dives, scalar bounds), tbb or cuda (batch_loop)
  std::vector<std::vector<Action>> fixed_;  // neighbourhood search: the guide's fixed actions per device

  std::mutex pool_mu_;
  std::priority_queue<NodePtr, std::vector<NodePtr>, NodeOrder> pool_;
  int busy_ = 0;
  std::vector<std::atomic<double>> working_bound_;
  std::size_t max_open_ = 0;  // pool size beyond which workers explore depth-first locally
  std::mutex done_mu_;
  std::condition_variable done_cv_;
  bool done_ = false;

  std::atomic<double> incumbent_{kInf};
  std::atomic<double> gap_cut_bound_{kInf};
  std::atomic<double> proven_bound_{0};  // the largest global bound seen
  std::mutex best_mu_;
  Schedule best_;
  std::string best_origin_;
  double seconds_to_best_ = 0;
  double root_bound_ = 0;

  std::atomic<bool> stop_{false};
  std::atomic<int> stop_code_{0};  // why the search stopped early (StopCode)
  std::atomic<std::int64_t> nodes_{0};
  std::mutex stats_mu_;
  SolveStats stats_;
};

}  // namespace

SolveResult solve(const Instance& instance, const std::vector<Schedule>& warm_starts, const SolveOptions& options) {
  Search search(instance, options);
  return search.run(warm_starts);
}

RootBound root_lower_bound(const Instance& instance, double incumbent, const SolveOptions& options) {
  Search search(instance, options);
  return search.root_bound_only(incumbent);
}

}  // namespace optpipe
