#include "bounds/device_relaxation.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <limits>
#include <string>

#include "bounds/node_times.h"
#include "bounds/one_machine_bound.h"
#include "bounds/last_tails.h"
#include "bounds/dominance_memo.h"
#include "bounds/local_stages.h"
#include "bounds/pair_releases.h"
#include "model/simulator.h"

namespace optpipe {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kHair = 1e-7;      // the bound is the value less this (see the header)
constexpr double kTimeTol = 1e-9;   // ms: starts, ends and bounds compared with this slack
constexpr std::size_t kMemoEntries = 16;  // states kept per counter key (more: less pruning, no error)

constexpr int kF = 0, kB = 1, kW = 2;

// Device d's room above its static memory, with the simulator's tolerance.
double room_of(const Instance& inst, int d) {
  return inst.devices[d].memory_limit - inst.devices[d].static_memory + kMemoryTolerance;
}

class DeviceSearch {
 public:
  DeviceSearch(const Instance& inst, const BoundProblem& p, int d, const std::vector<double>& head, double cutoff,
               std::int64_t node_limit, double seconds, bool prune, bool pairs,
               const std::vector<LastTails>* tails = nullptr, std::int64_t chain_from = kChainReleasesFrom)
      : p_(p), m_(p.m), types_(p.types), node_limit_(node_limit), seconds_(seconds), prune_(prune),
        chain_from_(chain_from),
        started_(std::chrono::steady_clock::now()), best_(cutoff) {
    device_ = d;
    for (int s = 0; s < p.S; ++s) {
      if (p.device_of[s] == d) stages_.push_back(s);
    }
    k_ = static_cast<int>(stages_.size());
    cap_ = room_of(inst, d);
    chain_gaps(p, stages_, fgap_, bgap_);
    mem_change_ = memory_changes(inst, stages_);
    const int n = k_ * m_;
    head_.assign(3 * n, 0.0);
    tail_.assign(3 * n, 0.0);
    for (int i = 0; i < k_; ++i) {
      for (int j = 0; j < m_; ++j) {
        for (int t = 0; t < types_; ++t) {
          const int o = p.op(t, stages_[i], j);
          const double h = o < static_cast<int>(head.size()) ? head[o] : 0.0;
          head_[at(t, i, j)] = h == h ? h : 0.0;
          tail_[at(t, i, j)] = p.op_tail(t, stages_[i], j);
          left_ += dur(t, stages_[i]);
          ++ops_;
        }
      }
    }
    for (int i = 0; i < k_; ++i) {
      for (int t = 0; t < types_; ++t) {
        for (int j = 0; j < m_; ++j) {
          tail_order_.push_back({t, i, j, at(t, i, j), t * k_ + i, dur(t, stages_[i]), tail_[at(t, i, j)]});
        }
      }
    }
    std::stable_sort(tail_order_.begin(), tail_order_.end(), [](const Slot& a, const Slot& b) { return a.tail > b.tail; });
    // The ops not placed, linked in tail order: all of them now; unlink() and relink() keep it.
    const int size = static_cast<int>(tail_order_.size());
    pos_of_.assign(3 * n, -1);
    next_.resize(static_cast<std::size_t>(size) + 1);
    prev_.resize(static_cast<std::size_t>(size) + 1);
    for (int q = 0; q <= size; ++q) {
      next_[static_cast<std::size_t>(q)] = q == size ? 0 : q + 1;
      prev_[static_cast<std::size_t>(q)] = q == 0 ? size : q - 1;
      if (q < size) pos_of_[static_cast<std::size_t>(tail_order_[static_cast<std::size_t>(q)].op)] = q;
    }
    late_.resize(kLateJobs);
    end_.assign(3 * n, kInf);
    cnt_.assign(3 * k_, 0);
    tails_.resize(static_cast<std::size_t>(k_));
    for (int i = 0; i < k_; ++i) {
      tails_[static_cast<std::size_t>(i)] = tails ? (*tails)[static_cast<std::size_t>(stages_[i])]
                                                  : last_tail_choices(p, stages_[i]);
    }
    pair_release_.assign(3 * n, -kInf);
    pairs_.resize(static_cast<std::size_t>(k_));
    for (int i = 0; i < k_ && pairs; ++i) {
      // Through the later stages when the next one is on another device (when it is on d, the
      // B's release comes from that stage's B here, exactly).
      if (i + 1 < k_ && stages_[i + 1] == stages_[i] + 1) continue;
      pairs_[static_cast<std::size_t>(i)] = pair_release_orders(p, stages_[i]);
    }
    if (pairs) releases_.resize(static_cast<std::size_t>(ops_) + 1);
  }

  // Whether the relaxed optimum reaches the cutoff, and nothing more: the search stops at the
  // first relaxed schedule below it (unfinished, worth 0).
  void below_only() { floor_ = kInf; }
  // Stop at the first relaxed schedule at most `floor` (unfinished: its value cannot matter).
  void stop_at_or_below(double floor) { floor_ = floor; }

  // Starts from a search node: the device's ops that started (a FIFO prefix per stage and type)
  // are placed where they are, all ended by the device's free time (later ops start after it).
  void start_from(const NodeTimes& node) {
    double t = node.device_free[static_cast<std::size_t>(device_)], cur = node.makespan_so_far;
    for (int i = 0; i < k_; ++i) {
      const int s = stages_[i];
      for (int ty = 0; ty < types_; ++ty) {
        for (int j = 0; j < m_; ++j) {
          const double e = node.end[static_cast<std::size_t>(p_.op(ty, s, j))];
          if (!(e == e)) break;
          end_[at(ty, i, j)] = e;
          ++cnt(ty, i);
          unlink(at(ty, i, j));
          ++placed_;
          left_ -= dur(ty, s);
          t = std::max(t, e);
          cur = std::max(cur, end_tail(ty, i, j, e));
          mem0_ += mem_change_[ty * k_ + i];
        }
      }
    }
    t0_ = t;
    cur0_ = cur;
  }

  // The ops of `order` (of d's, not placed yet) run in that order from the start, each at its
  // earliest start (as the search places them): their makespan, or infinity when the order is
  // not one the search could follow (an op out of FIFO order or before its inputs, a forward
  // that does not fit in memory) or leaves an op of d out. O(n) for the n ops of d.
  double timed(const std::vector<Action>& order) {
    double t = t0_, mem = mem0_, cur = cur0_;
    timed_.clear();
    bool ok = static_cast<int>(order.size()) == ops_ - placed_;
    for (std::size_t q = 0; ok && q < order.size(); ++q) {
      const Action& a = order[q];
      const int ty = static_cast<int>(a.type);  // (kF, kB, kW are OpType's F, B, W; R is none of d's)
      const int i = local_of(a.stage);
      ok = ty < types_ && i >= 0 && a.mb == cnt(ty, i) && a.mb < m_ && known_inputs(ty, i, a.mb) &&
           (ty != kF || mem + mem_change_[kF * k_ + i] <= cap_);
      if (!ok) break;
      const double e = std::max(t, release(ty, i, a.mb)) + dur(ty, stages_[i]);
      end_[at(ty, i, a.mb)] = e;
      ++cnt(ty, i);
      timed_.push_back(at(ty, i, a.mb));
      cur = std::max(cur, end_tail(ty, i, a.mb, e));
      t = e;
      mem += mem_change_[ty * k_ + i];
    }
    for (auto it = timed_.rbegin(); it != timed_.rend(); ++it) {  // undone, as the search leaves them
      end_[static_cast<std::size_t>(*it)] = kInf;
      --cnt_[static_cast<std::size_t>(*it / m_)];  // (at() / m is the counter's index, type * k + i)
    }
    return ok ? cur : kInf;
  }

  // The question at a node (below_only) answered by a relaxed schedule in a given order below the
  // cutoff, without a search: unfinished (it cannot cut), with that makespan as `upper`.
  bool answered_by(const std::vector<Action>& order, DeviceRelaxation& out) {
    const double v = timed(order);
    if (!(v < best_ - kTimeTol)) return false;  // (where the search would have cut it)
    out.applicable = true;
    out.upper = v;
    out.from_witness = true;
    return true;
  }

  DeviceRelaxation run() {
    DeviceRelaxation out;
    out.applicable = true;
    const bool done = dfs(t0_, mem0_, cur0_, left_);
    out.nodes = nodes_;
    out.finished = done;
    if (found_) out.upper = best_;
    if (found_ && !done) out.witness = best_path_;
    if (done && best_ < kInf) {  // (nothing found below an infinite cutoff: no schedule; claim nothing)
      out.exact = found_;
      out.bound = std::max(0.0, best_ - kHair);
      if (found_) out.order = best_path_;
    }
    return out;
  }

 private:
  double dur(int t, int s) const { return p_.dur[t * p_.S + s]; }
  int local_of(int s) const {
    for (int i = 0; i < k_; ++i) {
      if (stages_[i] == s) return i;
    }
    return -1;
  }
  int at(int t, int i, int j) const { return (t * k_ + i) * m_ + j; }
  // The makespan's bound from op (t, i, j) ending at e: its static tail, and for the last B of
  // a stage the tail of its last B's through the stages below (last_tails.h).
  double end_tail(int t, int i, int j, double e) const {
    double v = e + tail_[at(t, i, j)];
    const LastTails& tails = tails_[static_cast<std::size_t>(i)];
    if (t == kB && j == m_ - 1 && !tails.empty()) {
      std::array<double, kMaxLastTailMicrobatches> x{};
      for (int q = 0; q + 1 < tails.k; ++q) x[static_cast<std::size_t>(q)] = end_[at(kB, i, m_ - tails.k + q)];
      x[static_cast<std::size_t>(tails.k - 1)] = e;
      v = std::max(v, last_tail(tails, x.data()));
    }
    return v;
  }
  int& cnt(int t, int i) { return cnt_[t * k_ + i]; }

  // The release of the next op of type t on local stage i, microbatch j (its FIFO predecessors
  // and inputs placed).
  double release(int t, int i, int j) const {
    double r = head_[at(t, i, j)];
    if (t == kF) {
      if (i > 0) r = std::max(r, end_[at(kF, i - 1, j)] + fgap_[i]);
    } else if (t == kB) {
      r = std::max({r, end_[at(kF, i, j)] + p_.latency[stages_[i]], pair_release_[at(kB, i, j)]});
      if (i + 1 < k_) r = std::max(r, end_[at(kB, i + 1, j)] + bgap_[i + 1]);
    } else {
      r = std::max(r, end_[at(kB, i, j)]);
    }
    return r;
  }

  bool out_of_budget() {
    if (node_limit_ >= 0 && nodes_ >= node_limit_) return true;
    if (seconds_ > 0 && (nodes_ & 1023) == 0) {
      const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
      if (el > seconds_) return true;
    }
    return false;
  }

  // The key (counters) and the values that decide every completion: the free time, the makespan
  // so far, and the effective releases (at least the free time) of what placed ops still release.
  void signature(double t, double cur, std::vector<double>& sig) const {
    sig.clear();
    sig.push_back(t);
    sig.push_back(cur);
    for (int i = 0; i < k_; ++i) {
      const int nf = cnt_[kF * k_ + i], nb = cnt_[kB * k_ + i];
      for (int j = nb; j < nf; ++j) {
        sig.push_back(std::max({t, end_[at(kF, i, j)] + p_.latency[stages_[i]], pair_release_[at(kB, i, j)]}));
      }
      if (i + 1 < k_) {
        for (int j = cnt_[kF * k_ + i + 1]; j < nf; ++j) sig.push_back(std::max(t, end_[at(kF, i, j)] + fgap_[i + 1]));
      }
      if (i > 0) {
        for (int j = cnt_[kB * k_ + i - 1]; j < nb; ++j) sig.push_back(std::max(t, end_[at(kB, i, j)] + bgap_[i]));
      }
      // The next forward's release pair reads the last forward's end itself (not only the
      // release it gives its B, which the free time may hide).
      if (!pairs_[static_cast<std::size_t>(i)].empty() && nb < nf) sig.push_back(end_[at(kF, i, nf - 1)]);
      // The last k microbatches' tail reads their B ends when B(m-1) is placed.
      if (const int k = tails_[static_cast<std::size_t>(i)].k; k > 0 && nb < m_) {
        for (int j = std::max(m_ - k, 0); j < nb; ++j) sig.push_back(end_[at(kB, i, j)]);
      }
    }
  }
  // Whether a stored state with the same counters is no worse everywhere; else stores this one.
  bool dominated(double t, double cur) {
    signature(t, cur, sig_);
    return memo_.dominated_or_stored(cnt_.data(), cnt_.size(), sig_);
  }

  struct Slot {  // an op: type, local stage, microbatch, at(), its counter's index, duration, tail
    int ty, i, j, op, counter;
    double dur, tail;
  };
  // Jackson's preemptive bound (one_machine_bound.h) of the ops not placed, each released at the
  // free time, its head, and (for the next of its stage and type) what the placed ops release.
  // The jobs come by tail (tail_order_) for the closed form, which answers unless many are
  // released after t (near the search's start); then Jackson's rule itself on the same jobs.
  // Only compared with a threshold (`enough`): it returns as soon as the value is known to reach
  // it, with a lower bound of at least `enough` then (the jobs added so far, all released at t or
  // later, are one of the closed form's sets; JacksonByTail::value).
  double one_machine(double t, double mem, double enough) {
    memory_releases(t, mem);
    chain_ = nodes_ > chain_from_;
    if (chain_) chain_releases(t);
    JacksonByTail by_tail{t, late_.data(), kLateJobs};
    const int end = static_cast<int>(tail_order_.size());
    for (int q = next_[static_cast<std::size_t>(end)]; q != end; q = next_[static_cast<std::size_t>(q)]) {
      const Slot& x = tail_order_[static_cast<std::size_t>(q)];
      if (!by_tail.add(job_release(x, t), x.dur, x.tail)) return one_machine_by_rule(t);
      if (t + by_tail.best >= enough) return t + by_tail.best;
    }
    return by_tail.value(enough);
  }
  double one_machine_by_rule(double t) {
    jobs_.clear();
    const int end = static_cast<int>(tail_order_.size());
    for (int q = next_[static_cast<std::size_t>(end)]; q != end; q = next_[static_cast<std::size_t>(q)]) {
      const Slot& x = tail_order_[static_cast<std::size_t>(q)];
      jobs_.push_back({job_release(x, t), x.dur, x.tail});
    }
    heap_.resize(jobs_.size());
    return jackson_core(jobs_.data(), static_cast<int>(jobs_.size()), heap_.data());
  }
  // The list of the ops not placed (tail order): op `o` (at()) leaves it when placed, and comes
  // back when unplaced; the search undoes placements in the reverse order (dancing links, D. E.
  // Knuth, "Dancing links", 2000), so each is O(1). one_machine() walks only the ops left.
  void unlink(int o) {
    const std::size_t q = static_cast<std::size_t>(pos_of_[static_cast<std::size_t>(o)]);
    next_[static_cast<std::size_t>(prev_[q])] = next_[q];
    prev_[static_cast<std::size_t>(next_[q])] = prev_[q];
  }
  void relink(int o) {
    const std::size_t q = static_cast<std::size_t>(pos_of_[static_cast<std::size_t>(o)]);
    next_[static_cast<std::size_t>(prev_[q])] = static_cast<int>(q);
    prev_[static_cast<std::size_t>(next_[q])] = static_cast<int>(q);
  }
  // The release of a job not placed at free time t.
  double job_release(const Slot& x, double t) const {
    if (chain_) return chain_release_[static_cast<std::size_t>(x.op)];
    double r = std::max(t, head_[x.op]);
    if (x.ty == kF && memory_releases_on()) r = std::max(r, ftau_[static_cast<std::size_t>(x.j - cnt_[x.counter])]);
    return x.j == cnt_[x.counter] && known_inputs(x.ty, x.i, x.j) ? std::max(r, release(x.ty, x.i, x.j)) : r;
  }
  // Releases along the chains (see the header): chain_release_[at()] of every op not placed, at
  // free time t: its head, the memory release of the forwards, its FIFO predecessor's release
  // plus that op's duration (one machine), and what precedes it in the model (the forward chain
  // from the device's stage before, F + latency before B, the backward chain from the stage
  // after, B before W), each placed predecessor by its end and each other one by its own
  // release plus its duration. Forwards by stage upwards, then backwards and weights by stage
  // downwards: every input is computed before the op that reads it. O(n) for the n ops.
  void chain_releases(double t) {
    chain_release_.resize(end_.size());
    const bool memory = memory_releases_on();
    auto end_or_release = [&](int ty, int i, int j) {
      return j < cnt(ty, i) ? end_[at(ty, i, j)] : chain_release_[at(ty, i, j)] + dur(ty, stages_[i]);
    };
    for (int i = 0; i < k_; ++i) {
      const int nf = cnt(kF, i);
      double prev = -kInf;  // the end of the stage's previous forward, at its release
      for (int j = nf; j < m_; ++j) {
        double r = std::max({t, head_[at(kF, i, j)], prev});
        if (memory) r = std::max(r, ftau_[static_cast<std::size_t>(j - nf)]);
        if (i > 0) r = std::max(r, end_or_release(kF, i - 1, j) + fgap_[i]);
        chain_release_[at(kF, i, j)] = r;
        prev = r + dur(kF, stages_[i]);
      }
    }
    for (int i = k_ - 1; i >= 0; --i) {
      const int s = stages_[i];
      double prev = -kInf;
      for (int j = cnt(kB, i); j < m_; ++j) {
        double r = std::max({t, head_[at(kB, i, j)], prev, end_or_release(kF, i, j) + p_.latency[s],
                             pair_release_[at(kB, i, j)]});
        if (i + 1 < k_) r = std::max(r, end_or_release(kB, i + 1, j) + bgap_[i + 1]);
        chain_release_[at(kB, i, j)] = r;
        prev = r + dur(kB, s);
      }
      prev = -kInf;
      for (int j = types_ == 3 ? cnt(kW, i) : m_; j < m_; ++j) {
        const double r = std::max({t, head_[at(kW, i, j)], prev, end_or_release(kB, i, j)});
        chain_release_[at(kW, i, j)] = r;
        prev = r + dur(kW, s);
      }
    }
  }
  // Memory releases (see the header): ftau_[q] is no later than the start of any F placed
  // q + 1-th from now, so of F(i, cnt + q) of every stage i. Before it, the B's and W's of the
  // placed and the placeable microbatches, each at its earliest end (its release, its FIFO
  // predecessor, the free time; the machine ignored), free at most what they hold, and q + 1 F's
  // need room for at least q + 1 times the smallest activation. O(n log n) for the n frees.
  bool memory_releases_on() const { return nodes_ > kMemoryReleasesFrom; }
  void memory_releases(double t, double mem) {
    if (!memory_releases_on()) return;
    int fleft = 0;
    double amin = kInf, adds = 0;
    for (int i = 0; i < k_; ++i) {
      const int left = m_ - cnt(kF, i);
      fleft = std::max(fleft, left);
      adds += left * mem_change_[kF * k_ + i];
      if (left > 0) amin = std::min(amin, mem_change_[kF * k_ + i]);
    }
    ftau_.assign(static_cast<std::size_t>(fleft), t);
    if (mem + adds <= cap_) return;  // every F left fits without a free
    frees_.clear();
    for (int i = 0; i < k_; ++i) {
      const int s = stages_[i];
      const int nf = cnt(kF, i), nb = cnt(kB, i), nw = types_ == 3 ? cnt(kW, i) : 0;
      const double fb = -mem_change_[kB * k_ + i], fw = types_ == 3 ? -mem_change_[kW * k_ + i] : 0.0;
      const double db = dur(kB, s), dw = types_ == 3 ? dur(kW, s) : 0.0;
      double prev_w = -kInf;
      for (int j = nw; j < nb && types_ == 3; ++j) {
        prev_w = std::max(std::max(t, end_[at(kB, i, j)]) + dw, prev_w + dw);
        if (fw > 0) frees_.push_back({prev_w, fw});
      }
      double prev_b = -kInf;
      for (int j = nb; j < m_; ++j) {
        double r = head_[at(kB, i, j)];
        if (j < nf) {
          r = std::max({r, end_[at(kF, i, j)] + p_.latency[s], pair_release_[at(kB, i, j)]});
          if (i + 1 < k_ && j < cnt(kB, i + 1)) r = std::max(r, end_[at(kB, i + 1, j)] + bgap_[i + 1]);
        } else {
          r = std::max(r, t + dur(kF, s) + p_.latency[s]);
        }
        prev_b = std::max(std::max(t, r) + db, prev_b + db);
        if (fb > 0) frees_.push_back({prev_b, fb});
        if (types_ == 3) {
          prev_w = std::max(prev_b + dw, prev_w + dw);
          if (fw > 0) frees_.push_back({prev_w, fw});
        }
      }
    }
    std::sort(frees_.begin(), frees_.end(), [](const Free& a, const Free& b) { return a.at < b.at; });
    const double eps = 1e-9 * cap_;
    std::size_t e = 0;
    double freed = 0, when = t;
    for (int q = 0; q < fleft; ++q) {
      const double need = mem + (q + 1) * amin - cap_;
      while (freed < need - eps && e < frees_.size()) {
        freed += frees_[e].bytes;
        when = std::max(when, frees_[e].at);
        ++e;
      }
      ftau_[static_cast<std::size_t>(q)] = need <= eps ? t : when;
    }
  }
  // Whether the ops that release (ty, i, j) are placed (then release() reads their ends).
  bool known_inputs(int ty, int i, int j) const {
    if (ty == kF) return i == 0 || j < cnt_[kF * k_ + i - 1];
    if (ty == kB) return j < cnt_[kF * k_ + i] && (i + 1 == k_ || j < cnt_[kB * k_ + i + 1]);
    return j < cnt_[kB * k_ + i];
  }

  // Depth first from free time t, memory mem, makespan so far cur, work left; false when a limit
  // stopped it.
  bool dfs(double t, double mem, double cur, double left) {
    ++nodes_;
    if (out_of_budget()) return false;
    if (prune_ && std::max(cur, t + std::max(0.0, left)) >= best_ - kTimeTol) return true;
    if (placed_ == ops_) {  // (not left <= 0: the sum of durations rounds differently on each path)
      if (cur < best_) {
        best_ = cur;
        found_ = true;
        best_path_ = path_;
        // At most the floor (a bound, so its value less the hair): it cannot raise the bound;
        // below_only's floor is infinite: the question is answered, not at least the cutoff.
        if (cur <= floor_ + kHair + kTimeTol) return false;
      }
      return true;
    }
    if (prune_ && (cur >= best_ - kTimeTol || one_machine(t, mem, best_ - kTimeTol) >= best_ - kTimeTol)) return true;
    if (prune_ && dominated(t, cur)) return true;
    // The candidates, by start.
    struct Cand {
      double start;
      int t, i, j;
    };
    std::array<Cand, 3 * 8> cands;  // (not zeroed at every node: only the first nc are read)
    int nc = 0;
    for (int i = 0; i < k_ && nc + 3 <= static_cast<int>(cands.size()); ++i) {
      const int nf = cnt(kF, i), nb = cnt(kB, i), nw = cnt(kW, i);
      if (nf < m_ && mem + mem_change_[kF * k_ + i] <= cap_ && (i == 0 || cnt(kF, i - 1) > nf)) {
        cands[nc++] = {std::max(t, release(kF, i, nf)), kF, i, nf};
      }
      if (nb < nf && (i + 1 == k_ || cnt(kB, i + 1) > nb)) cands[nc++] = {std::max(t, release(kB, i, nb)), kB, i, nb};
      if (types_ == 3 && nw < nb) cands[nc++] = {std::max(t, release(kW, i, nw)), kW, i, nw};
    }
    std::sort(cands.begin(), cands.begin() + nc, [](const Cand& a, const Cand& b) {
      return a.start < b.start || (a.start == b.start && a.t > b.t);  // ties: W, then B, then F
    });
    // Active orders only (see the header): no op that starts at or after the earliest end of a
    // candidate B or W, except that one. Seed-1 small-loop-03's device 0 at the root: 1.4M -> 0.73M
    // nodes; at the tree's nodes 20-50% fewer on the slow V and loop instances.
    EarliestFreeing freeing;
    for (int c = 0; c < nc && prune_; ++c) {
      freeing.offer(c, cands[c].t != kF, cands[c].start + dur(cands[c].t, stages_[cands[c].i]));
    }
    for (int c = 0; c < nc; ++c) {
      const Cand& x = cands[c];
      if (freeing.skips(c, x.start)) continue;
      const int s = stages_[x.i];
      const double d = dur(x.t, s), e = x.start + d;
      const double mem2 = mem + mem_change_[x.t * k_ + x.i];
      end_[at(x.t, x.i, x.j)] = e;
      ++cnt(x.t, x.i);
      unlink(at(x.t, x.i, x.j));
      ++placed_;
      path_.push_back(x.t == kF ? make_f(s, x.j) : x.t == kB ? make_b(s, x.j) : make_w(s, x.j));
      const double cur2 = std::max(cur, end_tail(x.t, x.i, x.j, e));
      const std::vector<PairOrder>& orders = pairs_[static_cast<std::size_t>(x.i)];
      bool ok = true;
      if (x.t == kF && x.j >= 1 && !orders.empty() && cnt(kB, x.i) < x.j) {
        // F(s, j) while B(s, j - 1) waits: one branch per release pair of (j - 1, j).
        double& rj = pair_release_[at(kB, x.i, x.j - 1)];
        double& rk = pair_release_[at(kB, x.i, x.j)];
        const double before = rj;
        const double fj = end_[at(kF, x.i, x.j - 1)];
        std::vector<PairRelease>& releases = releases_[static_cast<std::size_t>(placed_)];
        pair_releases(orders, p_.comm_after[s], fj, e, std::max(fj + p_.latency[s], before), e + p_.latency[s],
                      releases);
        for (std::size_t q = 0; q < releases.size() && ok; ++q) {
          rj = releases[q].j;
          rk = releases[q].k;
          ok = dfs(e, mem2, cur2, left - d);
        }
        rj = before;
        rk = -kInf;
      } else {
        ok = dfs(e, mem2, cur2, left - d);
      }
      --cnt(x.t, x.i);
      relink(at(x.t, x.i, x.j));
      --placed_;
      path_.pop_back();
      end_[at(x.t, x.i, x.j)] = kInf;
      if (!ok) return false;
    }
    return true;
  }

  const BoundProblem& p_;
  const int m_, types_;
  const std::int64_t node_limit_;
  const double seconds_;
  const bool prune_;
  const std::int64_t chain_from_;  // chain releases past this many nodes (device_relaxation.h)
  const std::chrono::steady_clock::time_point started_;
  std::vector<int> stages_;
  int device_ = 0, k_ = 0;
  double t0_ = 0, mem0_ = 0, cur0_ = 0;  // the start: free time, memory, makespan so far
  double cap_ = 0, left_ = 0;
  std::vector<double> fgap_, bgap_;   // [i]: chains from local stage i - 1 to i (F) and back (B)
  std::vector<double> mem_change_;    // [t * k + i]: bytes an op of type t of local stage i adds
  std::vector<double> head_, tail_;   // [at(t, i, j)]
  std::vector<LastTails> tails_;      // [i]: the last microbatches' tails (last_tails.h)
  std::vector<std::vector<PairOrder>> pairs_;  // [i]: the pair releases' orders (pair_releases.h), or none
  std::vector<double> pair_release_;  // [at(B, i, j)]: B's release from its branch's pair (-inf: none)
  std::vector<std::vector<PairRelease>> releases_;  // [depth]: the release pairs branched on there
  std::vector<double> end_;           // [at(t, i, j)]: ends of placed ops
  std::vector<int> cnt_;              // [t * k + i]: ops of each type placed per local stage
  DominanceMemo memo_{kMemoEntries, kTimeTol};
  std::vector<double> sig_;
  // Past this many ops released after the free time, Jackson's rule instead of the closed form
  // (O(late^2)); 16 answered 98% of the calls on seed-17 small-loop-06 of random_small.py, and 24
  // takes 2.7% of the instructions off seed-17 small-v-02's probing (callgrind), where the rule ran
  // 68k times past 16.
  static constexpr int kLateJobs = 24;
  // The memory releases only from this many nodes of a search on: most searches at the tree's
  // nodes end sooner, where they cost more than they cut. Median CPU time of the 17 slowest V and
  // loop instances of random_small.py (one thread, 5 interleaved runs): 12.06 s without them,
  // 12.70 s from the first node, 12.37 s from 100, 11.39 s from 1000 (seed-7 v-06 1.05 -> 0.74 s,
  // seed-11 v-04 0.68 -> 0.48 s; bench/README.md).
  static constexpr std::int64_t kMemoryReleasesFrom = 1000;
  struct Free {  // a B or W freeing `bytes` at the earliest at `at`
    double at, bytes;
  };
  std::vector<Free> frees_;
  std::vector<double> ftau_;  // [q]: the memory release of the F placed q + 1-th from now
  bool chain_ = false;                 // one_machine() reads chain_release_ (chain_releases())
  std::vector<double> chain_release_;  // [at()]: the ops' releases along the chains
  std::vector<Slot> tail_order_;      // every op, by tail, descending
  std::vector<int> pos_of_;           // [at()]: its place in tail_order_
  std::vector<int> next_, prev_;      // the ops not placed, linked in tail order (sentinel: tail_order_.size())
  std::vector<OneMachineJob> jobs_, late_;
  std::vector<JacksonEntry> heap_;
  double best_;
  bool found_ = false;
  double floor_ = -kInf;  // stop at a relaxed schedule at most this (below_only: any)
  int ops_ = 0, placed_ = 0;  // ops of the device, and placed on the current path
  std::vector<Action> path_, best_path_;  // the current path's ops, and the best leaf's
  std::vector<int> timed_;                // timed(): the ops it placed (at()), undone after
  std::int64_t nodes_ = 0;
};

}  // namespace

bool device_relaxation_applies(const Instance& inst, const BoundProblem& p, int d) {
  if (d < 0 || d >= p.D) return false;
  int stages = 0;
  double all = 0;
  for (int s = 0; s < p.S; ++s) {
    if (p.device_of[s] != d) continue;
    ++stages;
    if (inst.stages[s].offloadable() && inst.offload_levels.back() > 0) return false;
    all += p.m * p.activation[s];
  }
  if (stages < 2 || stages > 8) return false;
  return all > room_of(inst, d);
}

std::vector<int> device_relaxation_devices(const Instance& inst, const BoundProblem& p) {
  std::vector<int> out;
  for (int d = 0; d < p.D; ++d) {
    if (device_relaxation_applies(inst, p, d)) out.push_back(d);
  }
  return out;
}

DeviceRelaxation device_relaxation(const Instance& inst, const BoundProblem& p, int d, const std::vector<double>& head,
                                   double cutoff, std::int64_t node_limit, double seconds, bool prune, bool pairs,
                                   double floor, std::int64_t chain_releases_from) {
  if (!device_relaxation_applies(inst, p, d)) return {};
  DeviceSearch search(inst, p, d, head, cutoff, node_limit, seconds, prune, pairs, nullptr, chain_releases_from);
  search.stop_at_or_below(floor);
  return search.run();
}

std::vector<double> device_relaxation_node_key(const BoundProblem& p, int d, const NodeTimes& node) {
  std::vector<double> key;
  for (int s = 0; s < p.S; ++s) {
    if (p.device_of[s] != d) continue;
    for (int ty = 0; ty < p.types; ++ty) {
      const std::size_t count_at = key.size();
      key.push_back(0);
      for (int j = 0; j < p.m; ++j) {
        const double e = node.end[static_cast<std::size_t>(p.op(ty, s, j))];
        if (!(e == e)) break;
        key.push_back(e);
        key[count_at] += 1;
      }
    }
  }
  return key;
}

std::vector<double> device_relaxation_node_params(const BoundProblem& p, int d, const NodeTimes& node,
                                                  const std::vector<double>& head) {
  std::vector<double> params{node.device_free[static_cast<std::size_t>(d)], node.makespan_so_far};
  for (int s = 0; s < p.S; ++s) {
    if (p.device_of[s] != d) continue;
    for (int ty = 0; ty < p.types; ++ty) {
      for (int j = 0; j < p.m; ++j) {
        const std::size_t o = static_cast<std::size_t>(p.op(ty, s, j));
        if (node.end[o] == node.end[o]) continue;  // started: in the key
        const double h = o < head.size() ? head[o] : 0.0;
        params.push_back(h == h ? h : 0.0);
      }
    }
  }
  return params;
}

DeviceRelaxation device_relaxation_at_node(const Instance& inst, const BoundProblem& p, int d, const NodeTimes& node,
                                           const std::vector<double>& head, double cutoff, std::int64_t node_limit,
                                           const std::vector<LastTails>* tails, const std::vector<std::vector<Action>>* witnesses,
                                           std::int64_t chain_releases_from) {
  if (!device_relaxation_applies(inst, p, d)) return {};
  DeviceSearch search(inst, p, d, head, cutoff, node_limit, 0, true, false, tails, chain_releases_from);
  search.start_from(node);
  search.below_only();
  DeviceRelaxation out;
  if (witnesses) {
    for (int q = 0; q < static_cast<int>(witnesses->size()); ++q) {
      if (search.answered_by((*witnesses)[static_cast<std::size_t>(q)], out)) {
        out.witness_index = q;
        return out;
      }
    }
  }
  return search.run();
}

}  // namespace optpipe
