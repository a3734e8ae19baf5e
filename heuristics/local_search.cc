#include "heuristics/local_search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <unordered_set>

#include "model/checkpointed_simulation.h"
#include "model/error.h"
#include "model/op_index.h"
#include "model/simulator.h"
#include "model/validator.h"
#include "heuristics/offload_edit.h"

namespace optpipe {

int default_checkpoints(long long compute_ops) {
  if (compute_ops >= kManyCheckpointOps) return 16;
  return compute_ops >= kCheckpointOps ? 8 : 0;
}

bool default_offload_swaps(long long compute_ops) { return compute_ops >= kSwapOps; }
bool default_untried_first(long long compute_ops) { return compute_ops >= kUntriedFirstOps; }

const char* to_string(MoveKind kind) {
  switch (kind) {
    case MoveKind::kShift: return "shift";
    case MoveKind::kOffloadLevel: return "offload-level";
    case MoveKind::kReloadShift: return "reload-shift";
    case MoveKind::kOffloadSwap: return "offload-swap";
  }
  return "?";
}

namespace {

bool same_op(const Action& a, OpType type, int s, int j) { return a.type == type && a.stage == s && a.mb == j; }

int find_in(const std::vector<Action>& list, OpType type, int s, int j, int from, int to) {
  for (int k = std::max(from, 0); k < std::min(to, static_cast<int>(list.size())); ++k) {
    if (same_op(list[k], type, s, j)) return k;
  }
  return -1;
}

int next_compute(const std::vector<Action>& list, int i) {
  for (int k = i + 1; k < static_cast<int>(list.size()); ++k) {
    if (list[k].is_compute()) return k;
  }
  return -1;
}

int prev_compute(const std::vector<Action>& list, int i) {
  for (int k = i - 1; k >= 0; --k) {
    if (list[k].is_compute()) return k;
  }
  return -1;
}

}  // namespace

namespace local_search {
namespace {

// The adjacent interchange of the compute action at i with the next compute action; R entries
// keep their places except the R of the F that moves past it and the R of the B that moves
// before it (see the header). False when there is no next compute action or both are of one
// stage and type.
bool interchange_with_next(std::vector<Action>& list, int i) {
  const int q = next_compute(list, i);
  if (q < 0) return false;
  const Action x = list[i], y = list[q];
  if (x.type == y.type && x.stage == y.stage) return false;
  std::swap(list[i], list[q]);
  if (x.type == OpType::F && x.r > 0) {
    const int k = find_in(list, OpType::R, x.stage, x.mb, i + 1, q);
    if (k >= 0) {
      const Action r = list[k];
      list.erase(list.begin() + k);      // x now at q - 1
      list.insert(list.begin() + q, r);  // right after x
    }
  }
  if (y.type == OpType::B) {
    const int k = find_in(list, OpType::R, y.stage, y.mb, i + 1, static_cast<int>(list.size()));
    if (k >= 0) {
      const Action r = list[k];
      list.erase(list.begin() + k);
      list.insert(list.begin() + i, r);  // right before y
    }
  }
  return true;
}

}  // namespace

bool apply_raw(const Instance& inst, Schedule& sch, const Move& mv) {
  if (mv.device < 0 || mv.device >= sch.num_devices()) return false;
  auto& list = sch.devices[mv.device];
  const int n = static_cast<int>(list.size());
  if (mv.index < 0 || mv.index >= n) return false;
  const Action a = list[mv.index];
  switch (mv.kind) {
    case MoveKind::kShift: {
      if (!a.is_compute() || mv.delta == 0) return false;
      const std::vector<Action> saved = list;
      int i = mv.index;
      for (int step = 0; step < std::abs(mv.delta); ++step) {
        bool ok;
        if (mv.delta > 0) {
          ok = interchange_with_next(list, i);
        } else {
          const int p = prev_compute(list, i);
          ok = p >= 0 && interchange_with_next(list, p);
        }
        if (!ok) {
          list = saved;
          return false;
        }
        i = find_in(list, a.type, a.stage, a.mb, 0, static_cast<int>(list.size()));
      }
      return true;
    }
    case MoveKind::kOffloadLevel: {
      if (a.type != OpType::F || !inst.stages[a.stage].offloadable() || !inst.is_offload_level(mv.r) ||
          std::fabs(mv.r - a.r) <= 1e-12) {
        return false;
      }
      if (a.r > 0 && mv.r > 0) {
        list[mv.index].r = mv.r;  // the R stays where it is
      } else {
        set_offload(sch, mv.device, a.stage, a.mb, mv.r, mv.position);
      }
      return true;
    }
    case MoveKind::kOffloadSwap: {
      if (a.type != OpType::F || a.r > 0 || !inst.stages[a.stage].offloadable() || mv.delta == 0) return false;
      const int partner = a.mb + mv.delta;
      if (partner < 0 || partner >= inst.microbatches) return false;
      const double r = offload_level(sch, mv.device, a.stage, partner);
      if (r <= 0) return false;
      int position = mv.position;
      const int partner_r = find_action(list, OpType::R, a.stage, partner);
      if (partner_r >= 0 && partner_r < position) --position;  // the list as it is after the removal
      set_offload(sch, mv.device, a.stage, partner, 0.0, 0);
      set_offload(sch, mv.device, a.stage, a.mb, r, position);
      return true;
    }
    case MoveKind::kReloadShift: {
      if (a.type != OpType::R || mv.delta == 0) return false;
      const int target = mv.index + mv.delta;  // index in the list without the R
      if (target < 0 || target > n - 1) return false;
      list.erase(list.begin() + mv.index);
      list.insert(list.begin() + target, a);
      return true;
    }
  }
  return false;
}

bool list_well_formed(const Instance& inst, int d, const std::vector<Action>& list) {
  const int S = inst.num_stages(), m = inst.microbatches;
  const std::size_t sm = static_cast<std::size_t>(S) * m;
  std::vector<int> last(static_cast<std::size_t>(4) * S, -1);  // [type*S + s]: last microbatch seen
  std::vector<int> pos_f(sm, -1), pos_b(sm, -1), pos_r(sm, -1);
  std::vector<double> level(sm, 0.0);
  for (int k = 0; k < static_cast<int>(list.size()); ++k) {
    const Action& a = list[k];
    if (a.stage < 0 || a.stage >= S || a.mb < 0 || a.mb >= m) return false;
    if (inst.stages[a.stage].device != d) return false;
    int& l = last[static_cast<std::size_t>(a.type) * S + a.stage];
    if (a.mb <= l) return false;  // FIFO (and no duplicates)
    l = a.mb;
    const std::size_t sj = static_cast<std::size_t>(a.stage) * m + a.mb;
    switch (a.type) {
      case OpType::F:
        if (a.r != 0) {
          if (a.r < 0 || !inst.stages[a.stage].offloadable() || !inst.is_offload_level(a.r)) return false;
        }
        pos_f[sj] = k;
        level[sj] = a.r;
        break;
      case OpType::B: pos_b[sj] = k; break;
      case OpType::W:
        if (!inst.split_backward) return false;
        break;
      case OpType::R: pos_r[sj] = k; break;
    }
    if (a.type != OpType::F && a.r != 0) return false;
  }
  for (std::size_t sj = 0; sj < sm; ++sj) {
    if (pos_r[sj] < 0) {
      if (level[sj] > 0) return false;  // offload without reload
      continue;
    }
    if (pos_f[sj] < 0 || level[sj] <= 0) return false;  // reload without offload
    if (pos_r[sj] < pos_f[sj] || (pos_b[sj] >= 0 && pos_r[sj] > pos_b[sj])) return false;
    if (pos_b[sj] < 0) return false;
  }
  return true;
}

bool list_self_deadlocks(const Instance& inst, const std::vector<Action>& list) {
  const int S = inst.num_stages(), m = inst.microbatches;
  if (list.empty()) return false;
  const int d = inst.stages[list.front().stage].device;
  int stages_here = 0;
  for (const Stage& st : inst.stages) stages_here += st.device == d ? 1 : 0;
  std::vector<int> last_f(m, -1), last_b(m, S), count_f(m, 0);
  std::vector<char> seen_b(static_cast<std::size_t>(S) * m, 0);
  for (const Action& a : list) {
    const int j = a.mb;
    switch (a.type) {
      case OpType::F:
        if (last_f[j] > a.stage || last_b[j] < S) return true;
        last_f[j] = a.stage;
        ++count_f[j];
        break;
      case OpType::B:
        if (count_f[j] < stages_here || last_b[j] < a.stage) return true;
        last_b[j] = a.stage;
        seen_b[static_cast<std::size_t>(a.stage) * m + j] = 1;
        break;
      case OpType::W:
        if (!seen_b[static_cast<std::size_t>(a.stage) * m + j]) return true;
        break;
      case OpType::R: break;
    }
  }
  return false;
}

bool apply_move(const Instance& inst, Schedule& sch, const Move& mv) {
  if (mv.device < 0 || mv.device >= sch.num_devices()) return false;
  std::vector<Action> saved = sch.devices[mv.device];
  if (!apply_raw(inst, sch, mv)) return false;
  const auto& list = sch.devices[mv.device];
  if (list_well_formed(inst, mv.device, list) && !list_self_deadlocks(inst, list)) return true;
  sch.devices[mv.device] = std::move(saved);
  return false;
}

std::vector<Move> all_moves(const Instance& inst, const Schedule& sch, int max_shift) {
  std::vector<Move> out;
  for (int d = 0; d < sch.num_devices(); ++d) {
    const auto& list = sch.devices[d];
    for (int k = 0; k < static_cast<int>(list.size()); ++k) {
      const Action& a = list[k];
      if (a.is_compute()) {
        for (int delta = -max_shift; delta <= max_shift; ++delta) {
          if (delta != 0) out.push_back({MoveKind::kShift, d, k, delta, 0.0, 0});
        }
      }
      if (a.type == OpType::F && inst.stages[a.stage].offloadable()) {
        for (double r : inst.offload_levels) {
          if (std::fabs(r - a.r) <= 1e-12) continue;
          if (a.r <= 0 && r > 0) {
            const auto [lo, hi] = reload_range(sch, d, a.stage, a.mb);
            out.push_back({MoveKind::kOffloadLevel, d, k, 0, r, lo});
            if (hi != lo) out.push_back({MoveKind::kOffloadLevel, d, k, 0, r, hi});
          } else {
            out.push_back({MoveKind::kOffloadLevel, d, k, 0, r, k + 1});
          }
        }
        if (a.r <= 0) {
          for (int delta = -kSwapReach; delta <= kSwapReach; ++delta) {
            if (delta == 0 || offload_level(sch, d, a.stage, a.mb + delta) <= 0) continue;
            const auto [lo, hi] = reload_range(sch, d, a.stage, a.mb);
            out.push_back({MoveKind::kOffloadSwap, d, k, delta, 0.0, lo});
            if (hi != lo) out.push_back({MoveKind::kOffloadSwap, d, k, delta, 0.0, hi});
          }
        }
      }
      if (a.type == OpType::R) {
        for (int delta : {-2, -1, 1, 2}) out.push_back({MoveKind::kReloadShift, d, k, delta, 0.0, 0});
      }
    }
  }
  return out;
}

}  // namespace local_search

namespace {

using local_search::Move;

// splitmix64: a small generator whose output is the same on every platform.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : x_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (x_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n), n >= 1.
  int below(int n) { return static_cast<int>(next() % static_cast<std::uint64_t>(n)); }
  // Fisher-Yates on [first, last) of v.
  template <class T, class It>
  void shuffle_range(std::vector<T>&, It first, It last) {
    for (auto n = static_cast<int>(last - first); n > 1; --n) std::swap(first[n - 1], first[below(n)]);
  }

 private:
  std::uint64_t x_;
};

struct Key {
  double makespan = std::numeric_limits<double>::infinity();
  double tie = std::numeric_limits<double>::infinity();  // sum of compute end times
};

bool better(const Key& a, const Key& b) {
  if (a.makespan < b.makespan - kTimeEps) return true;
  if (a.makespan > b.makespan + kTimeEps) return false;
  return a.tie < b.tie - 1e-9 * std::max(1.0, std::fabs(b.tie));
}

// Start and end of every compute op (by Simulator::op_id) and reload end per (s, j).
struct Timing {
  std::vector<double> start, end, rel_end, off_end;
};

struct Solution {
  Schedule sch;
  Key key;
  Timing timing;
  std::array<std::int64_t, kMoveKinds> lineage{};  // descent steps by move kind that led here
};

// One run of the iterated local search (see the header): its simulator, random numbers and
// statistics, the critical-op marks of the current solution, the moves and the descent.
class IteratedLocalSearch {
 public:
  IteratedLocalSearch(const Instance& inst, const LocalSearchOptions& opt, LocalSearchStats& stats)
      : inst_(inst), opt_(opt), stats_(stats), sim_(inst, std::max(1, checkpoints_for(inst, opt))),
        use_checkpoints_(checkpoints_for(inst, opt) > 0), rng_(opt.seed ^ 0x6a09e667f3bcc909ULL),
        swaps_(inst.can_offload() &&
               (opt.offload_swaps >= 0 ? opt.offload_swaps > 0 : default_offload_swaps(inst.num_compute_ops()))),
        untried_first_(opt.untried_first >= 0 ? opt.untried_first > 0 : default_untried_first(inst.num_compute_ops())),
        S_(inst.num_stages()), m_(inst.microbatches) {}

  static int checkpoints_for(const Instance& inst, const LocalSearchOptions& opt) {
    if (opt.checkpoints >= 0) return opt.checkpoints;
    return default_checkpoints(inst.num_compute_ops());
  }

  double target() const { return current_target(opt_); }

  bool out_of_budget() const {
    return stats_.evaluations >= opt_.max_evaluations || (opt_.stop != nullptr && opt_.stop->load(std::memory_order_relaxed));
  }

  // LocalSearchOptions::stall_evaluations runs since the last new best (the start counts as one).
  bool stalled() const {
    return opt_.stall_evaluations > 0 && stats_.evaluations - last_best_evaluation_ >= opt_.stall_evaluations;
  }

  // One simulation; false when the schedule deadlocks.
  bool evaluate(const Schedule& sch, Key* key) {
    ++stats_.evaluations;
    const SimResult r = sim_.run(sch);
    if (!r.feasible) return false;
    key->makespan = r.makespan;
    double tie = 0;
    for (double e : sim_.snapshot().end) {
      if (e == e) tie += e;  // NaN: a W slot of a fused backward
    }
    key->tie = tie;
    return true;
  }

  void save_timing(Timing& t) const {
    const auto& st = sim_.snapshot();
    t.start = st.start;
    t.end = st.end;
    t.rel_end = st.rel_end;
    t.off_end = st.off_end;
  }

  int op(OpType type, int s, int j) const { return op_index(S_, m_, static_cast<int>(type), s, j); }

  // Marks the critical ops of `sol` (see the header) in crit_, the reloads in crit_reload_ and
  // the forwards resident while a forward waits for memory in mem_rel_.
  void analyse(const Solution& sol) {
    const std::size_t nops = static_cast<std::size_t>(3) * S_ * m_, sm = static_cast<std::size_t>(S_) * m_;
    crit_.assign(nops, 0);
    crit_reload_.assign(sm, 0);
    mem_rel_.assign(nops, 0);
    where_d_.assign(nops, -1);
    where_k_.assign(nops, -1);
    for (int d = 0; d < sol.sch.num_devices(); ++d) {
      const auto& list = sol.sch.devices[d];
      for (int k = 0; k < static_cast<int>(list.size()); ++k) {
        if (!list[k].is_compute()) continue;
        const int o = op(list[k].type, list[k].stage, list[k].mb);
        where_d_[o] = d;
        where_k_[o] = k;
      }
    }
    const Timing& t = sol.timing;
    const double tol = 1e-7 * std::max(1.0, sol.key.makespan);
    std::vector<int> stack;
    auto push = [&](int o) {
      if (o < 0 || crit_[o] || where_d_[o] < 0) return;
      crit_[o] = 1;
      stack.push_back(o);
    };
    for (std::size_t o = 0; o < nops; ++o) {
      if (t.end[o] == t.end[o] && t.end[o] >= sol.key.makespan - tol) push(static_cast<int>(o));
    }
    while (!stack.empty()) {
      const int o = stack.back();
      stack.pop_back();
      const int d = where_d_[o], k = where_k_[o];
      const auto& list = sol.sch.devices[d];
      const Action& a = list[k];
      const double st = t.start[o];
      if (st <= tol) continue;
      bool bound = false;
      auto try_pred = [&](int p, double extra) {
        if (p >= 0 && t.end[p] == t.end[p] && t.end[p] + extra >= st - tol) {
          push(p);
          bound = true;
        }
      };
      const int pk = prev_compute(list, k);
      if (pk >= 0) try_pred(op(list[pk].type, list[pk].stage, list[pk].mb), 0.0);
      const int s = a.stage, j = a.mb;
      const std::size_t sj = static_cast<std::size_t>(s) * m_ + j;
      switch (a.type) {
        case OpType::F:
          if (s > 0) try_pred(op(OpType::F, s - 1, j), inst_.comm_after(s - 1));
          break;
        case OpType::B:
          try_pred(op(OpType::F, s, j), 0.0);
          if (s + 1 < S_) try_pred(op(OpType::B, s + 1, j), inst_.comm_after(s));
          if (t.rel_end[sj] == t.rel_end[sj] && t.rel_end[sj] >= st - tol) {
            crit_reload_[sj] = 1;
            push(op(OpType::F, s, j));
            bound = true;
          }
          break;
        case OpType::W: try_pred(op(OpType::B, s, j), 0.0); break;
        case OpType::R: break;
      }
      if (bound || a.type != OpType::F) continue;
      // A forward that waited for memory: what freed it, and what was resident meanwhile.
      for (const Action& b : list) {
        if (!b.is_compute()) continue;
        const int ob = op(b.type, b.stage, b.mb);
        if ((b.type == OpType::B || b.type == OpType::W) && std::fabs(t.end[ob] - st) <= tol) push(ob);
        if (b.type == OpType::F) {
          const std::size_t bsj = static_cast<std::size_t>(b.stage) * m_ + b.mb;
          if (b.r > 0 && std::fabs(t.off_end[bsj] - st) <= tol) push(ob);
          const int obb = op(OpType::B, b.stage, b.mb);
          if (t.start[ob] < st && !(t.end[obb] <= st)) mem_rel_[ob] = 1;
        }
      }
    }
  }


  bool crit(const Action& a) const { return a.is_compute() && crit_[op(a.type, a.stage, a.mb)]; }
  bool offload_related(const Action& a) const {
    const std::size_t sj = static_cast<std::size_t>(a.stage) * m_ + a.mb;
    const int f = op(OpType::F, a.stage, a.mb), b = op(OpType::B, a.stage, a.mb);
    return crit_reload_[sj] || crit_[f] || crit_[b] || mem_rel_[f];
  }

  // The latest R place in reload_range whose request leaves the reload time before B(s,j)'s start.
  int hidden_position(const Solution& sol, int d, int s, int j, double r) const {
    const auto [lo, hi] = reload_range(sol.sch, d, s, j);
    const auto& list = sol.sch.devices[d];
    const double deadline = sol.timing.start[op(OpType::B, s, j)];
    const double need = r * *inst_.stages[s].reload;
    for (int p = hi; p >= lo; --p) {
      double request = 0;
      for (int k = p - 1; k >= 0; --k) {
        if (list[k].is_compute()) {
          request = sol.timing.end[op(list[k].type, list[k].stage, list[k].mb)];
          break;
        }
      }
      if (request + need <= deadline + kTimeEps) return p;
    }
    return lo;
  }

  // The descent neighbourhood of sol: moves touching critical ops first, each part shuffled.
  std::vector<Move> neighbourhood(const Solution& sol) {
    std::vector<Move> first, rest;
    for (int d = 0; d < sol.sch.num_devices(); ++d) {
      const auto& list = sol.sch.devices[d];
      for (int k = 0; k < static_cast<int>(list.size()); ++k) {
        const Action& a = list[k];
        if (a.is_compute()) {
          const int q = next_compute(list, k);
          if (q >= 0) {
            const bool c = crit(a) || crit(list[q]);
            (c ? first : rest).push_back({MoveKind::kShift, d, k, 1, 0.0, 0});
          }
          if (crit(a)) {
            for (int delta = 2; delta <= opt_.max_shift; ++delta) {
              first.push_back({MoveKind::kShift, d, k, delta, 0.0, 0});
              first.push_back({MoveKind::kShift, d, k, -delta, 0.0, 0});
            }
          }
        }
        if (a.type == OpType::F && inst_.stages[a.stage].offloadable()) {
          auto& dest = offload_related(a) ? first : rest;
          for (double r : inst_.offload_levels) {
            if (std::fabs(r - a.r) <= 1e-12) continue;
            if (a.r <= 0 && r > 0) {
              const auto [lo, hi] = reload_range(sol.sch, d, a.stage, a.mb);
              const int hid = hidden_position(sol, d, a.stage, a.mb, r);
              dest.push_back({MoveKind::kOffloadLevel, d, k, 0, r, hid});
              if (lo != hid) dest.push_back({MoveKind::kOffloadLevel, d, k, 0, r, lo});
              if (hi != hid && hi != lo) dest.push_back({MoveKind::kOffloadLevel, d, k, 0, r, hi});
            } else {
              dest.push_back({MoveKind::kOffloadLevel, d, k, 0, r, k + 1});
            }
          }
        }
        if (a.type == OpType::R) {
          auto& dest = offload_related(a) ? first : rest;
          for (int delta : {-1, 1, -2, 2}) dest.push_back({MoveKind::kReloadShift, d, k, delta, 0.0, 0});
        }
      }
    }
    if (swaps_) append_swaps(sol, first, rest);
    first.insert(first.end(), rest.begin(), rest.end());
    if (opt_.critical_first) {
      const auto split = first.end() - static_cast<std::ptrdiff_t>(rest.size());
      rng_.shuffle_range(first, first.begin(), split);
      rng_.shuffle_range(first, split, first.end());
    } else {
      rng_.shuffle_range(first, first.begin(), first.end());
    }
    return first;
  }

  // Appends sol's swaps (kOffloadSwap) to the descent's moves: to `first` those that touch a
  // critical or memory-bound op, to `rest` the others.
  void append_swaps(const Solution& sol, std::vector<Move>& first, std::vector<Move>& rest) {
    std::vector<double>& level = levels_;  // every F's offload level
    level.assign(static_cast<std::size_t>(S_) * m_, 0.0);
    for (const auto& list : sol.sch.devices) {
      for (const Action& a : list) {
        if (a.type == OpType::F) level[static_cast<std::size_t>(a.stage) * m_ + a.mb] = a.r;
      }
    }
    for (int d = 0; d < sol.sch.num_devices(); ++d) {
      const auto& list = sol.sch.devices[d];
      for (int k = 0; k < static_cast<int>(list.size()); ++k) {
        const Action& a = list[k];
        if (a.type != OpType::F || a.r > 0 || !inst_.stages[a.stage].offloadable()) continue;
        for (int delta = -kSwapReach; delta <= kSwapReach; ++delta) {
          const int partner = a.mb + delta;
          if (delta == 0 || partner < 0 || partner >= m_) continue;
          const double r = level[static_cast<std::size_t>(a.stage) * m_ + partner];
          if (r <= 0) continue;
          Action p = a;
          p.mb = partner;
          auto& to = offload_related(a) || offload_related(p) ? first : rest;
          const int lo = reload_range(sol.sch, d, a.stage, a.mb).first;
          const int hid = hidden_position(sol, d, a.stage, a.mb, r);
          to.push_back({MoveKind::kOffloadSwap, d, k, delta, 0.0, hid});
          if (lo != hid) to.push_back({MoveKind::kOffloadSwap, d, k, delta, 0.0, lo});
        }
      }
    }
  }

  // Tries `moves` on sol in order and takes the first better one; true when one was taken.
  bool first_improvement(Solution& sol, const std::vector<Move>& moves) {
    for (const Move& mv : moves) {
      if (out_of_budget()) return false;
      const std::uint64_t key = untried_first_ ? move_key(sol.sch, mv) : 0;
      std::vector<Action> saved = sol.sch.devices[mv.device];
      if (!local_search::apply_move(inst_, sol.sch, mv)) continue;
      Key k;
      if (evaluate(sol.sch, &k) && better(k, sol.key)) {
        sol.key = k;
        save_timing(sol.timing);
        ++sol.lineage[static_cast<int>(mv.kind)];
        ++stats_.improvements;
        ++stats_.improvements_by_move[static_cast<int>(mv.kind)];
        return true;
      }
      sol.sch.devices[mv.device] = std::move(saved);
      if (untried_first_) failed_.insert(key);
    }
    return false;
  }

  // First-improvement descent from sol (which must be feasible, key and timing set).
  // With untried_first, each step's neighbourhood puts the moves already tried in vain in this
  // descent after the others (each part in its shuffled order): the step before changed the
  // schedule in one place, and most moves elsewhere fail again (don't-look bits, J. L. Bentley,
  // "Fast Algorithms for Geometric Traveling Salesman Problems", ORSA J. Computing 4(4), 1992).
  // A step still tries every move before the descent ends, so it ends at a local optimum as
  // without.
  void descend(Solution& sol) {
    failed_.clear();
    while (!out_of_budget()) {
      if (use_checkpoints_) sim_.set_base(sol.sch);  // the moves below edit sol.sch
      analyse(sol);
      std::vector<Move> moves = neighbourhood(sol);
      if (untried_first_) {
        std::stable_partition(moves.begin(), moves.end(),
                              [&](const Move& mv) { return !failed_.count(move_key(sol.sch, mv)); });
      }
      if (!first_improvement(sol, moves)) return;
    }
  }

  // A move's identity across steps (list indices shift, the op does not): its kind, device, the
  // op it edits, its delta, level and R place relative to the op. Collisions only reorder.
  std::uint64_t move_key(const Schedule& sch, const Move& mv) const {
    const auto& list = sch.devices[mv.device];
    const Action& a = list[static_cast<std::size_t>(mv.index)];
    std::uint64_t h = static_cast<std::uint64_t>(mv.kind);  // FNV-1a style over the fields
    for (const std::int64_t v : {std::int64_t{mv.device}, std::int64_t{static_cast<int>(a.type)}, std::int64_t{a.stage},
                                 std::int64_t{a.mb}, std::int64_t{mv.delta}, std::int64_t{mv.position - mv.index},
                                 static_cast<std::int64_t>(std::llround(mv.r * 1e6))}) {
      h = (h ^ static_cast<std::uint64_t>(v)) * 0x100000001b3ULL;
    }
    return h;
  }

  // Up to `strength` random valid moves on sch; returns how many were applied.
  int kick(Schedule& sch, int strength) {
    int applied = 0;
    for (int attempt = 0; attempt < 30 * strength && applied < strength; ++attempt) {
      std::vector<std::pair<int, int>> computes, forwards, reloads;
      for (int d = 0; d < sch.num_devices(); ++d) {
        const auto& list = sch.devices[d];
        for (int k = 0; k < static_cast<int>(list.size()); ++k) {
          const Action& a = list[k];
          if (a.is_compute()) computes.emplace_back(d, k);
          if (a.type == OpType::F && inst_.stages[a.stage].offloadable()) forwards.emplace_back(d, k);
          if (a.type == OpType::R) reloads.emplace_back(d, k);
        }
      }
      const int u = rng_.below(10);
      Move mv;
      if (u >= 6 && u < 8 && !forwards.empty() && inst_.can_offload()) {
        const auto [d, k] = forwards[rng_.below(static_cast<int>(forwards.size()))];
        const Action& a = sch.devices[d][k];
        const double r = inst_.offload_levels[rng_.below(static_cast<int>(inst_.offload_levels.size()))];
        int position = k + 1;
        if (a.r <= 0 && r > 0) {
          const auto [lo, hi] = reload_range(sch, d, a.stage, a.mb);
          position = lo + rng_.below(hi - lo + 1);
        }
        mv = {MoveKind::kOffloadLevel, d, k, 0, r, position};
      } else if (u >= 8 && !reloads.empty()) {
        const auto [d, k] = reloads[rng_.below(static_cast<int>(reloads.size()))];
        int delta = rng_.below(8) - 4;
        if (delta >= 0) ++delta;
        mv = {MoveKind::kReloadShift, d, k, delta, 0.0, 0};
      } else {
        if (computes.empty()) break;
        const auto [d, k] = computes[rng_.below(static_cast<int>(computes.size()))];
        const int span = std::max(1, opt_.max_shift);
        int delta = rng_.below(2 * span) - span;
        if (delta >= 0) ++delta;
        mv = {MoveKind::kShift, d, k, delta, 0.0, 0};
      }
      if (local_search::apply_move(inst_, sch, mv)) ++applied;
    }
    return applied;
  }

  Solution run(const Schedule& start) {
    Solution cur;
    cur.sch = start;
    if (!evaluate(cur.sch, &cur.key)) throw InputError("local search: the start schedule does not complete");
    save_timing(cur.timing);
    stats_.start_makespan = cur.key.makespan;
    if (cur.key.makespan > target() + kTargetTolerance) descend(cur);
    Solution best = cur;
    // A strictly shorter best goes to on_new_best.
    double reported = stats_.start_makespan;
    auto report = [&] {
      if (!opt_.on_new_best || !(best.key.makespan < reported - kTimeEps)) return;
      reported = best.key.makespan;
      opt_.on_new_best(best.sch, reported);
    };
    report();
    int since_best = 0, barren = 0;
    const int kmin = std::max(1, opt_.kick_min), kmax = std::max(kmin, opt_.kick_max);
    last_best_evaluation_ = stats_.evaluations;
    while (!out_of_budget() && !stalled() && best.key.makespan > target() + kTargetTolerance) {
      const int strength = kmin + since_best % (kmax - kmin + 1);
      Solution cand = cur;
      bool feasible = false, applied = false;
      // A kick that deadlocks is retried, smaller each time (every try costs an evaluation).
      for (int tries = 0; tries < 5 && !out_of_budget(); ++tries) {
        cand.sch = cur.sch;
        if (kick(cand.sch, std::max(1, strength >> tries)) == 0) continue;
        applied = true;
        if (evaluate(cand.sch, &cand.key)) {
          feasible = true;
          break;
        }
      }
      if (!feasible) {
        if (!applied && ++barren > 20) break;  // no move applies to this schedule
        continue;
      }
      barren = 0;
      save_timing(cand.timing);
      ++stats_.kicks;
      descend(cand);
      if (better(cand.key, best.key)) {
        best = cand;
        ++stats_.new_best;
        last_best_evaluation_ = stats_.evaluations;
        report();
        since_best = 0;
      } else {
        ++since_best;
      }
      if (cand.key.makespan <= cur.key.makespan + kTimeEps) cur = std::move(cand);
      if (since_best > 0 && since_best % std::max(1, opt_.restart_after) == 0) cur = best;
    }
    return best;
  }

 private:
  const Instance& inst_;
  const LocalSearchOptions& opt_;
  LocalSearchStats& stats_;
  CheckpointedSimulation sim_;  // without a base (use_checkpoints_ false): plain simulations
  bool use_checkpoints_;
  Rng rng_;
  bool swaps_;  // kOffloadSwap in the descent (LocalSearchOptions::offload_swaps)
  bool untried_first_;  // LocalSearchOptions::untried_first
  std::unordered_set<std::uint64_t> failed_;  // the moves tried in vain since the descent began (move_key)
  int S_, m_;
  std::vector<char> crit_, crit_reload_, mem_rel_;
  std::vector<double> levels_;  // append_swaps()'s table of the F's offload levels, by stage * m + microbatch
  std::vector<int> where_d_, where_k_;
  std::int64_t last_best_evaluation_ = 0;
};

}  // namespace

Schedule improve_schedule(const Instance& instance, const Schedule& start, const LocalSearchOptions& options,
                          LocalSearchStats* stats) {
  const auto violations = check_structure(instance, start, 1);
  if (!violations.empty()) throw InputError("local search: the start schedule is not valid: " + violations.front().message);
  LocalSearchStats local;
  LocalSearchStats& st = stats ? *stats : local;
  st = LocalSearchStats{};
  IteratedLocalSearch search(instance, options, st);
  const auto best = search.run(start);
  Schedule out = best.sch;
  const SimResult r = simulate(instance, out, SimOptions::quiet());
  out.makespan = r.makespan;
  out.bubble = r.bubble;
  out.peak_memory = r.peak_memory;
  out.status = "feasible";
  out.solver = (start.solver.empty() ? std::string("start") : start.solver) + " + local search";
  out.bound.reset();
  out.gap.reset();
  st.final_makespan = r.makespan;
  st.best_by_move = best.lineage;
  return out;
}

}  // namespace optpipe
