#include "bounds/two_device_relaxation.h"

#include <algorithm>
#include <array>
#include <string>
#include <utility>

#include "bounds/heads.h"
#include "bounds/dominance_memo.h"
#include "bounds/local_stages.h"
#include "bounds/one_machine_bound.h"
#include "bounds/target_steps.h"
#include "model/simulator.h"

namespace optpipe {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kHair = 1e-7;           // the bound is the value less this (device_relaxation.h)
constexpr double kTimeTol = 1e-9;        // ms: starts, ends and bounds compared with this slack
constexpr std::size_t kMemoEntries = 64;  // states kept per counter key (more: less pruning, no error)
constexpr int kF = 0, kB = 1, kW = 2;

// Device d's room above its static memory (with the simulator's tolerance), or infinity where
// its memory cannot bind or one of its stages can offload.
double cap_of(const Instance& inst, const BoundProblem& p, int d) {
  double all = 0;
  for (int s = 0; s < p.S; ++s) {
    if (p.device_of[s] != d) continue;
    if (inst.stages[s].offloadable() && inst.offload_levels.back() > 0) return kInf;
    all += p.m * p.activation[s];
  }
  const double room = inst.devices[d].memory_limit - inst.devices[d].static_memory + kMemoryTolerance;
  return all > room ? room : kInf;
}

bool holds_a_stage(const BoundProblem& p, int d) {
  return std::find(p.device_of.begin(), p.device_of.end(), d) != p.device_of.end();
}

class PairSearch {
 public:
  PairSearch(const Instance& inst, const BoundProblem& p, int a, int b, const std::vector<double>& head, double cutoff,
             std::int64_t node_limit, bool prune)
      : p_(p), m_(p.m), types_(p.types), node_limit_(node_limit), prune_(prune), best_(cutoff) {
    for (int s = 0; s < p.S; ++s) {
      if (p.device_of[s] != a && p.device_of[s] != b) continue;
      stages_.push_back(s);
      dev_.push_back(p.device_of[s] == a ? 0 : 1);
    }
    k_ = static_cast<int>(stages_.size());
    cap_ = {cap_of(inst, p, a), cap_of(inst, p, b)};
    chain_gaps(p, stages_, fgap_, bgap_);
    mem_change_ = memory_changes(inst, stages_);
    const int n = 3 * k_ * m_;
    head_.assign(n, 0.0);
    tail_.assign(n, 0.0);
    end_.assign(n, kInf);
    release_.assign(n, 0.0);
    cnt_.assign(3 * k_, 0);
    for (int i = 0; i < k_; ++i) {
      for (int j = 0; j < m_; ++j) {
        for (int t = 0; t < types_; ++t) {
          const int o = p.op(t, stages_[i], j);
          const double h = o < static_cast<int>(head.size()) ? head[o] : 0.0;
          head_[at(t, i, j)] = h == h ? h : 0.0;
          tail_[at(t, i, j)] = p.op_tail(t, stages_[i], j);
          left_[dev_[i]] += dur(t, stages_[i]);
          ++ops_;
        }
      }
    }
  }

  // Stop at the first relaxed schedule below the cutoff: only whether the optimum reaches it.
  void below_only() { below_only_ = true; }

  TwoDeviceRelaxation run() {
    TwoDeviceRelaxation out;
    out.applicable = true;
    const bool done = dfs(0.0);
    out.nodes = nodes_;
    out.finished = done;
    if (found_) out.upper = best_;
    if (done && best_ < kInf) {
      out.exact = found_;
      out.bound = std::max(0.0, best_ - kHair);
    }
    return out;
  }

 private:
  double dur(int t, int s) const { return p_.dur[t * p_.S + s]; }
  int at(int t, int i, int j) const { return (t * k_ + i) * m_ + j; }
  int& cnt(int t, int i) { return cnt_[t * k_ + i]; }
  // The earliest a device's next op may start: its free time, and no op starts before the last
  // placed one (the placement order is the order of the starts).
  double ready(int x) const { return std::max(t_[x], last_); }

  // The release of op (t, i, j) from its head and from the ops placed (its inputs must be).
  double release(int t, int i, int j) const {
    double r = head_[at(t, i, j)];
    if (t == kF) {
      if (i > 0) r = std::max(r, end_[at(kF, i - 1, j)] + fgap_[i]);
    } else if (t == kB) {
      r = std::max(r, end_[at(kF, i, j)] + p_.latency[stages_[i]]);
      if (i + 1 < k_) r = std::max(r, end_[at(kB, i + 1, j)] + bgap_[i + 1]);
    } else {
      r = std::max(r, end_[at(kB, i, j)]);
    }
    return r;
  }

  // release_ of every op not placed: its head, its device's ready time, and the earliest its
  // inputs can end (placed: their ends; not: their release + duration), along the chains.
  void propagate() {
    auto earliest_end = [&](int t, int i, int j) {
      const int o = at(t, i, j);
      return j < cnt_[t * k_ + i] ? end_[o] : release_[o] + dur(t, stages_[i]);
    };
    for (int i = 0; i < k_; ++i) {
      for (int j = cnt_[kF * k_ + i]; j < m_; ++j) {
        double r = std::max(ready(dev_[i]), head_[at(kF, i, j)]);
        if (i > 0) r = std::max(r, earliest_end(kF, i - 1, j) + fgap_[i]);
        release_[at(kF, i, j)] = r;
      }
    }
    for (int i = k_ - 1; i >= 0; --i) {
      for (int j = cnt_[kB * k_ + i]; j < m_; ++j) {
        double r = std::max({ready(dev_[i]), head_[at(kB, i, j)], earliest_end(kF, i, j) + p_.latency[stages_[i]]});
        if (i + 1 < k_) r = std::max(r, earliest_end(kB, i + 1, j) + bgap_[i + 1]);
        release_[at(kB, i, j)] = r;
      }
    }
    if (types_ < 3) return;
    for (int i = 0; i < k_; ++i) {
      for (int j = cnt_[kW * k_ + i]; j < m_; ++j) {
        release_[at(kW, i, j)] = std::max({ready(dev_[i]), head_[at(kW, i, j)], earliest_end(kB, i, j)});
      }
    }
  }

  // Whether Jackson's preemptive bound of device x's ops not placed (propagate() first)
  // reaches `threshold`.
  bool one_machine_reaches(int x, double threshold) {
    jobs_.clear();
    for (int i = 0; i < k_; ++i) {
      if (dev_[i] != x) continue;
      for (int t = 0; t < types_; ++t) {
        for (int j = cnt_[t * k_ + i]; j < m_; ++j) {
          jobs_.push_back({release_[at(t, i, j)], dur(t, stages_[i]), tail_[at(t, i, j)]});
        }
      }
    }
    heap_.resize(jobs_.size());
    return jackson_core(jobs_.data(), static_cast<int>(jobs_.size()), heap_.data()) >= threshold;
  }

  // Whether a stored state with the same counters is no worse everywhere; else stores this one.
  // What decides every completion: the two ready times, the makespan so far, and the effective
  // releases of what placed ops still release (device_relaxation.h's signature, per device).
  bool dominated(double cur) {
    sig_.clear();
    sig_.push_back(ready(0));
    sig_.push_back(ready(1));
    sig_.push_back(cur);
    for (int i = 0; i < k_; ++i) {
      const int nf = cnt_[kF * k_ + i], nb = cnt_[kB * k_ + i];
      const double here = ready(dev_[i]);
      for (int j = nb; j < nf; ++j) sig_.push_back(std::max(here, end_[at(kF, i, j)] + p_.latency[stages_[i]]));
      if (i + 1 < k_) {
        const double next = ready(dev_[i + 1]);
        for (int j = cnt_[kF * k_ + i + 1]; j < nf; ++j) sig_.push_back(std::max(next, end_[at(kF, i, j)] + fgap_[i + 1]));
      }
      if (i > 0) {
        const double prev = ready(dev_[i - 1]);
        for (int j = cnt_[kB * k_ + i - 1]; j < nb; ++j) sig_.push_back(std::max(prev, end_[at(kB, i, j)] + bgap_[i]));
      }
      // (A W's release is its B's end, on the same device: never after that device's free time.)
    }
    return memo_.dominated_or_stored(cnt_.data(), cnt_.size(), sig_);
  }

  // Depth first from the placed ops, makespan so far `cur`; false when the node limit stopped it.
  bool dfs(double cur) {
    ++nodes_;
    if (node_limit_ >= 0 && nodes_ > node_limit_) return false;
    const double threshold = best_ - kTimeTol;
    if (prune_) {
      if (cur >= threshold) return true;
      for (int x = 0; x < 2; ++x) {
        if (left_[x] > 0 && ready(x) + left_[x] >= threshold) return true;
      }
    }
    if (placed_ == ops_) {
      if (cur < best_) {
        best_ = cur;
        found_ = true;
        if (below_only_) return false;  // answered (unfinished: its value cannot matter)
      }
      return true;
    }
    if (prune_) {
      propagate();
      for (int x = 0; x < 2; ++x) {
        if (one_machine_reaches(x, threshold)) return true;
      }
      if (dominated(cur)) return true;
    }
    struct Cand {
      double start;
      int t, i, j;
    };
    std::array<Cand, 3 * 16> cands{};
    int nc = 0;
    for (int i = 0; i < k_ && nc + 3 <= static_cast<int>(cands.size()); ++i) {
      const int x = dev_[i];
      const int nf = cnt(kF, i), nb = cnt(kB, i), nw = cnt(kW, i);
      auto add = [&](int t, int j) {
        const double start = std::max(t_[x], release(t, i, j));
        // Time order (pruned search): an op that could start before the last placed one belongs
        // to the sequences that place it earlier.
        if (prune_ && start < last_ - kTimeTol) return;
        cands[nc++] = {start, t, i, j};
      };
      if (nf < m_ && mem_[x] + mem_change_[kF * k_ + i] <= cap_[x] && (i == 0 || cnt(kF, i - 1) > nf)) add(kF, nf);
      if (nb < nf && (i + 1 == k_ || cnt(kB, i + 1) > nb)) add(kB, nb);
      if (types_ == 3 && nw < nb) add(kW, nw);
    }
    std::sort(cands.begin(), cands.begin() + nc, [](const Cand& u, const Cand& v) {
      return u.start < v.start || (u.start == v.start && u.t > v.t);  // ties: W, then B, then F
    });
    // Active orders on each device (device_relaxation.h): no op of a device that starts at or
    // after the earliest end of a candidate B or W of that device, except that one.
    std::array<EarliestFreeing, 2> freeing;
    for (int c = 0; c < nc && prune_; ++c) {
      freeing[dev_[cands[c].i]].offer(c, cands[c].t != kF, cands[c].start + dur(cands[c].t, stages_[cands[c].i]));
    }
    for (int c = 0; c < nc; ++c) {
      const Cand& y = cands[c];
      const int x = dev_[y.i];
      if (freeing[x].skips(c, y.start)) continue;
      const double d = dur(y.t, stages_[y.i]), e = y.start + d;
      const double t_before = t_[x], mem_before = mem_[x], last_before = last_;
      end_[at(y.t, y.i, y.j)] = e;
      ++cnt(y.t, y.i);
      ++placed_;
      t_[x] = e;
      mem_[x] += mem_change_[y.t * k_ + y.i];
      left_[x] -= d;
      last_ = y.start;
      const bool ok = dfs(std::max(cur, e + tail_[at(y.t, y.i, y.j)]));
      last_ = last_before;
      left_[x] += d;
      mem_[x] = mem_before;
      t_[x] = t_before;
      --placed_;
      --cnt(y.t, y.i);
      end_[at(y.t, y.i, y.j)] = kInf;
      if (!ok) return false;
    }
    return true;
  }

  const BoundProblem& p_;
  const int m_, types_;
  const std::int64_t node_limit_;
  const bool prune_;
  std::vector<int> stages_, dev_;    // [i]: local stage i's stage, and its device (0: a, 1: b)
  int k_ = 0;
  std::array<double, 2> cap_{}, t_{}, mem_{}, left_{};  // per device: room, free time, memory, work left
  double last_ = 0;                   // the start of the last placed op
  bool below_only_ = false;
  std::vector<double> fgap_, bgap_;   // [i]: chains from local stage i - 1 to i (F) and back (B)
  std::vector<double> mem_change_;    // [t * k + i]: bytes an op of type t of local stage i adds
  std::vector<double> head_, tail_, end_, release_;  // [at(t, i, j)]
  std::vector<int> cnt_;              // [t * k + i]: ops of each type placed per local stage
  DominanceMemo memo_{kMemoEntries, kTimeTol};
  std::vector<double> sig_;
  std::vector<OneMachineJob> jobs_;
  std::vector<JacksonEntry> heap_;
  double best_;
  bool found_ = false;
  int ops_ = 0, placed_ = 0;
  std::int64_t nodes_ = 0;
};

// Consecutive stages held by the two devices (either way round): the chain links between them.
int links(const BoundProblem& p, int a, int b) {
  int n = 0;
  for (int s = 0; s + 1 < p.S; ++s) {
    const int u = p.device_of[s], v = p.device_of[s + 1];
    n += (u == a && v == b) || (u == b && v == a) ? 1 : 0;
  }
  return n;
}

}  // namespace

bool two_device_relaxation_applies(const BoundProblem& p, int a, int b) {
  if (a == b || a < 0 || b < 0 || a >= p.D || b >= p.D) return false;
  if (!holds_a_stage(p, a) || !holds_a_stage(p, b)) return false;
  return p.S <= 16;  // (the candidates' array; these searches are for small instances)
}

TwoDeviceRelaxation two_device_relaxation(const Instance& inst, const BoundProblem& p, int a, int b,
                                          const std::vector<double>& head, double cutoff, std::int64_t node_limit,
                                          bool prune, bool below_only) {
  if (!two_device_relaxation_applies(p, a, b)) return {};
  PairSearch search(inst, p, a, b, head, cutoff, node_limit, prune);
  if (below_only) search.below_only();
  return search.run();
}

TwoDeviceBound two_device_bound(const Instance& inst, const BoundProblem& p, const std::vector<double>& head,
                                double cutoff, std::int64_t node_budget, double from) {
  std::vector<std::pair<int, int>> pairs;
  for (int a = 0; a < p.D; ++a) {
    for (int b = a + 1; b < p.D; ++b) {
      if (two_device_relaxation_applies(p, a, b)) pairs.emplace_back(a, b);
    }
  }
  std::stable_sort(pairs.begin(), pairs.end(), [&](const auto& u, const auto& v) {
    return links(p, u.first, u.second) > links(p, v.first, v.second);
  });
  TwoDeviceBound out;
  auto better = [&](double bound, int a, int b) {
    if (!(bound > out.bound)) return;
    out.bound = bound;
    out.a = a;
    out.b = b;
  };
  for (const auto& [a, b] : pairs) {
    if (node_budget - out.nodes <= 0) break;
    ++out.pairs;
    if (!(from > 0)) {  // the relaxed optimum below the cutoff
      const TwoDeviceRelaxation r = two_device_relaxation(inst, p, a, b, head, cutoff, node_budget - out.nodes);
      out.nodes += r.nodes;
      if (!r.finished) continue;
      ++out.finished;
      better(r.bound, a, b);
      if (!r.exact) break;  // the cutoff itself: no pair can claim more
      continue;
    }
    // Targets above the bound so far, each only asked (below-only); the first gets an eighth of
    // the budget, the later ones what is left.
    for (std::size_t k = 0;; ++k) {
      const std::int64_t left = node_budget - out.nodes;
      if (left <= 0) break;
      const double lo = std::max(from, out.bound);
      const double target = std::min(cutoff, target_above(lo, k));  // (as probing's: target_steps.h)
      const TwoDeviceRelaxation r = two_device_relaxation(inst, p, a, b, head, target,
                                                          k == 0 ? std::min(left, node_budget / 8) : left, true, true);
      out.nodes += r.nodes;
      if (!r.finished) {
        // A relaxed schedule below the target (or out of nodes): past a refuted target, the
        // relaxed optimum lies between the bound and that schedule; the exact search finds it.
        if (k == 0 || !(r.upper < target) || node_budget - out.nodes <= 0) break;
        const TwoDeviceRelaxation e = two_device_relaxation(inst, p, a, b, head, r.upper, node_budget - out.nodes);
        out.nodes += e.nodes;
        if (e.finished) better(e.exact ? e.bound : std::max(0.0, r.upper - kHair), a, b);
        break;
      }
      if (k == 0) ++out.finished;
      better(r.bound, a, b);
      if (target >= cutoff) return out;  // the cutoff itself
    }
  }
  return out;
}

TwoDeviceBound two_device_bound(const Instance& inst, double cutoff, std::int64_t node_budget, double from) {
  const BoundProblem p(inst);
  return two_device_bound(inst, p, root_heads(inst, p), cutoff, node_budget, from);
}

}  // namespace optpipe
