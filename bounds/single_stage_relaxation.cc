#include "bounds/single_stage_relaxation.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <deque>
#include <functional>
#include <limits>
#include <unordered_map>

#include "model/action.h"
#include "bounds/dominance_memo.h"
#include "bounds/node_transfers.h"
#include "bounds/pair_releases.h"
#include "bounds/last_tails.h"

namespace optpipe {
namespace {

constexpr double kEps = 1e-9;
constexpr double kInf = std::numeric_limits<double>::infinity();
// Dominance entries kept per key (counters, levels, pullable reloads); a full list recycles its
// oldest slot. Fewer entries only cut less: 32 keeps offload-slow-pcie-4x8's stage 0 within 2%
// of the nodes of an unlimited list at half its time.
constexpr std::size_t kEntriesPerKey = 32;

// A change of the stage's memory at time t (bytes; removals are negative).
struct MemoryEvent {
  double t, delta;
  bool history = false;  // an addition of the node's history (a forward or a reload that started)
  bool operator<(const MemoryEvent& o) const { return t < o.t || (t == o.t && delta < o.delta); }
};
using Profile = std::vector<MemoryEvent>;  // the stage's memory over time, sorted by time

void add_event(Profile& p, double t, double delta, bool history = false) {
  const MemoryEvent e{t, delta, history};
  p.insert(std::upper_bound(p.begin(), p.end(), e), e);
}

void remove_event(Profile& p, double t, double delta) {
  for (auto it = p.begin(); it != p.end(); ++it) {
    if (it->t == t && it->delta == delta && !it->history) {
      p.erase(it);
      return;
    }
  }
}

// The memory a forward starting at t sees (spec 4): what was added before t, less what was
// removed up to t; a reload that this search placed to start at t comes after the forward. (One
// that started at t in the node's history did start: no forward that is not in the history
// started with it, so it counts.)
double memory_for_forward(const Profile& p, double t) {
  double m = 0;
  for (const MemoryEvent& e : p) {
    if (e.t > t + kEps) break;
    if (e.t < t - kEps || e.delta < 0 || e.history) m += e.delta;
  }
  return m;
}

// Whether memory a is at most memory b at `from` and at every later instant (one merged pass
// over both profiles: O(|a| + |b|)).
bool no_fuller_from(const Profile& a, const Profile& b, double from) {
  std::size_t i = 0, k = 0;
  double ma = 0, mb = 0;
  double t = from;
  for (;;) {
    while (i < a.size() && a[i].t <= t + kEps) ma += a[i++].delta;
    while (k < b.size() && b[k].t <= t + kEps) mb += b[k++].delta;
    if (ma > mb + kEps) return false;
    if (i == a.size() && k == b.size()) return true;
    t = std::min(i < a.size() ? a[i].t : kInf, k < b.size() ? b[k].t : kInf);
  }
}

// A node of the relaxation's search: the stage's schedule so far in the relaxed model (its ops
// placed in order, their transfers and the memory profile they make).
struct PartialSchedule {
  explicit PartialSchedule(int microbatches = 0)
      : m(microbatches), per_mb(static_cast<std::size_t>(8 * microbatches), std::nan("")) {}
  int m;
  int nf = 0, nb = 0, nw = 0;  // F, B, W done (in microbatch order)
  double free = 0;             // the device is free from here on
  double makespan = 0;         // largest end + tail so far
  double d2h = 0;              // the D2H channel is free from here on
  double h2d = 0;              // the next reload can start no earlier
  int block_w = -1;            // spec rules: W's since the last B, which came after the last F (-1: no such B)
  // Per microbatch, in one buffer (one allocation a copy): F's end [j < nf]; its offload's end
  // (NaN at level 0); the end of a reload that already started at the node (else NaN); B's end
  // [j < nb]; the start of a reload this search placed (else NaN); for a reload that a waiting
  // forward forced to start by a deadline (spec rules; B not placed yet: `placed` is the
  // deadline), the earliest start the channel allows it (else NaN); B's release [j < nf]: F's
  // end + latency, or more from the pair releases (pair_releases.h); W's end [j < nw].
  std::vector<double> per_mb;
  Profile memory;
  double& f_end(int j) { return per_mb[j]; }
  double& offload_end(int j) { return per_mb[m + j]; }
  double& reload_end(int j) { return per_mb[2 * m + j]; }
  double& b_end(int j) { return per_mb[3 * m + j]; }
  double& placed(int j) { return per_mb[4 * m + j]; }
  double& forced_from(int j) { return per_mb[5 * m + j]; }
  double f_end(int j) const { return per_mb[j]; }
  double offload_end(int j) const { return per_mb[m + j]; }
  double reload_end(int j) const { return per_mb[2 * m + j]; }
  double b_end(int j) const { return per_mb[3 * m + j]; }
  double placed(int j) const { return per_mb[4 * m + j]; }
  double forced_from(int j) const { return per_mb[5 * m + j]; }
  double& b_release(int j) { return per_mb[6 * m + j]; }
  double b_release(int j) const { return per_mb[6 * m + j]; }
  double& w_end(int j) { return per_mb[7 * m + j]; }
  double w_end(int j) const { return per_mb[7 * m + j]; }
  bool forced(int j) const { return per_mb[5 * m + j] == per_mb[5 * m + j]; }
};

struct Params {
  int m = 0;
  double f = 0, b = 0, w = 0;
  double act = 0, mw = 0, cap = 0;
  double off = 0, rel = 0, lat = 0;
  double tail_b = 0, tail_w = 0;
  bool offloadable = false;
  // The memory's slots (lower_bound's slot energy): every set of activations and M_W's that fits
  // in cap has slot_act per activation plus slot_mw per M_W at most 1 (a dual feasible function;
  // 0 and 0: not used).
  double slot_act = 0, slot_mw = 0;
  // What any M_W at all takes: with one held, at most k - 1 activations fit beside it, so
  // slot_act per activation plus slot_w_held while an M_W is held is at most 1 (0: not used).
  double slot_w_held = 0;
  bool spec_first = false;  // the first stage under the spec's start rules (see below)
  std::vector<double> head_f, head_b;
  std::vector<PairOrder> pairs;  // the pair releases' orders (pair_releases.h); empty: off
  double comm = 0;               // after the stage
  LastTails tails;  // the last k microbatches' tails through the stages below (last_tails.h)
  // The makespan's bound when B(m-1) ends at `last` and the B's before it end as in `s` (-inf
  // without the tails).
  template <class State>
  double last_tail_of(const State& s, double last) const {
    if (tails.empty()) return -kInf;
    std::array<double, kMaxLastTailMicrobatches> x{};
    for (int i = 0; i + 1 < tails.k; ++i) x[static_cast<std::size_t>(i)] = s.b_end(m - tails.k + i);
    x[static_cast<std::size_t>(tails.k - 1)] = last;
    return last_tail(tails, x.data());
  }
};

// The children of one search node, kept per depth so that their buffers are reused: a state
// copied into a slot reuses the slot's capacity, so the search allocates almost nothing once
// it has warmed up.
struct Children {
  std::vector<PartialSchedule> states;
  std::size_t size = 0;
  std::vector<std::pair<double, std::size_t>> order;
  std::vector<double> starts;
  PartialSchedule& add(const PartialSchedule& s) {
    if (size < states.size()) {
      states[size] = s;
    } else {
      states.push_back(s);
    }
    return states[size++];
  }
};

// The depth-first search over the relaxed stage's schedules (the header's "Search"), with its
// bound, its dominance memo and the best makespan found (below the cutoff).
class RelaxationSearch {
 public:
  RelaxationSearch(const Params& p, double cutoff, std::int64_t limit, double seconds, bool prune, bool record = false,
                   double floor = -kInf, const std::atomic<bool>* stop = nullptr)
      : p_(p), best_(cutoff), floor_(floor), limit_(limit), seconds_(seconds), prune_(prune), record_(record),
        stop_(stop), start_(std::chrono::steady_clock::now()) {}

  // False when the node limit stopped it.
  bool run(const PartialSchedule& root) {
    try {
      dfs(root);
    } catch (const Stop&) {
      return false;
    } catch (const AtFloor&) {
      below_floor_ = true;
    }
    return true;
  }
  // Stopped at a leaf at or below the floor (best() is that leaf's makespan, not the optimum).
  bool below_floor() const { return below_floor_; }
  double best() const { return best_; }
  // The last leaf that improved the best (record: on), else the empty state.
  const PartialSchedule& best_leaf() const { return best_leaf_; }
  std::int64_t nodes() const { return nodes_; }

 private:
  struct Stop {};
  struct AtFloor {};
  struct Entry {
    std::vector<double> times;
    Profile memory;
    double free;
    double reach;  // the earliest instant a pull could move a placed reload to (kInf: none)
  };

  // Earliest t >= t0 with memory(t) + need <= cap; after the device's last decision memory only
  // falls (offload ends), so the candidates are t0 and the later event times. NaN: never.
  double earliest_fit(const Profile& mem, double t0) const {
    double t = t0;
    for (;;) {
      if (memory_for_forward(mem, t) + p_.act <= p_.cap + kEps) return t;
      double next = kInf;
      for (const MemoryEvent& e : mem) {
        if (e.t > t + kEps) {
          next = e.t;
          break;
        }
      }
      if (next == kInf) return std::nan("");
      t = next;
    }
  }

  // Earliest t >= t0 such that memory + act <= cap on all of [t - rel, t) (a reload ending at
  // t). Feasibility only improves with t (memory only falls after the last decision). NaN: never.
  double earliest_window(const Profile& mem, double t0) const {
    double t = t0;
    for (int guard = 0; guard < 4 * static_cast<int>(mem.size()) + 4; ++guard) {
      double bad_end = -kInf, value = 0;
      for (std::size_t k = 0; k < mem.size(); ++k) {
        value += mem[k].delta;
        if (k + 1 < mem.size() && mem[k + 1].t <= mem[k].t + kEps) continue;  // same instant
        const double seg_start = mem[k].t, seg_end = k + 1 < mem.size() ? mem[k + 1].t : kInf;
        if (value + p_.act > p_.cap + kEps && seg_start < t - kEps && seg_end > t - p_.rel + kEps) {
          bad_end = std::max(bad_end, seg_end);
        }
      }
      if (bad_end == -kInf) return t;
      if (bad_end == kInf) return std::nan("");
      t = bad_end + p_.rel;
    }
    return std::nan("");
  }

  // The H2D channel runs one reload at a time, in microbatch order. A reload this search placed
  // ends just in time for its B; if the reload of B(j), ending at t, would start before an
  // earlier placed one ends, that one must have run earlier: it is pulled back to end where the
  // next one starts, and so on down the chain (a reload that started before the node stays). A
  // pulled reload holds its activation from its new start, so memory must hold on every instant
  // from the earliest new start on, with the activation of j from t - rel. Returns the earliest
  // t >= t0 where it does, with the moves in `pulls` (microbatch, new start); NaN: never.
  // Feasibility only improves with t (later ends pull less, and memory after the device's last
  // decision only falls), so each step to the least t that clears the earliest overfull
  // interval of one of the moved activations skips no feasible t.
  using Pulls = std::vector<std::pair<int, double>>;
  double earliest_chain(const PartialSchedule& s, int j, double t0, Pulls& pulls) const {
    double t = t0;
    for (int guard = 0; guard < 64; ++guard) {
      pulls.clear();
      double limit = t - p_.rel;  // the reload of j starts here; earlier ones end by then
      for (int k = j - 1; k >= 0; --k) {
        if (!(s.offload_end(k) == s.offload_end(k))) continue;  // level 0: no reload
        const double start = s.placed(k);
        if (!(start == start)) break;  // its reload started before the node: the chain ends there
        if (start + p_.rel <= limit + kEps) break;
        pulls.emplace_back(k, limit - p_.rel);
        limit -= p_.rel;
      }
      if (pulls.empty()) {
        // Nothing to pull: the reload's own window alone, as earliest_window checks it.
        const double w = earliest_window(s.memory, t);
        if (!(w == w) || w <= t + kEps) return w;
        t = w;
        continue;
      }
      Profile& mem = chain_mem_;  // scratch: no allocation per step once grown
      mem = s.memory;
      for (const auto& [k, start] : pulls) {
        remove_event(mem, s.placed(k), p_.act);
        add_event(mem, start, p_.act);
      }
      add_event(mem, t - p_.rel, p_.act);
      const double from = pulls.back().second;  // the earliest new start
      double value = 0, step = -1;
      for (std::size_t e = 0; e < mem.size() && step < 0; ++e) {
        value += mem[e].delta;
        if (e + 1 < mem.size() && mem[e + 1].t <= mem[e].t + kEps) continue;  // same instant
        const double seg_start = mem[e].t, seg_end = e + 1 < mem.size() ? mem[e + 1].t : kInf;
        if (seg_end <= from + kEps || value <= p_.cap + kEps) continue;
        // Overfull on [seg_start, seg_end): the least t that moves one new holding out of it.
        double inc = kInf;
        if (t - p_.rel < seg_end - kEps) inc = seg_end - (t - p_.rel);
        for (const auto& [k, start] : pulls) {
          if (start < seg_end - kEps && s.placed(k) > seg_start + kEps) inc = std::min(inc, seg_end - start);
        }
        if (inc == kInf) return std::nan("");  // overfull for ever
        step = inc;
      }
      if (step < 0) return t;
      t += step;
    }
    pulls.clear();  // not settled: fall back to the reload alone, a weaker but valid model
    return earliest_window(s.memory, t0);
  }

  // Every remaining op runs on the device after `free`, and the last to end is a B or a W (each
  // F is followed by its B and W), so its tail follows. For each remaining B(j): it waits for its
  // F (the remaining forwards run one at a time, not before their heads) and the latency, for its
  // head, and, offloaded, for its reload; B(j..m-1) and W(j..m-1) all come after it. O(m).
  double lower_bound(const PartialSchedule& s) const {
    const double tail = std::min(p_.tail_b, p_.tail_w);
    double lb = std::max(s.makespan, s.free + (p_.m - s.nf) * p_.f + (p_.m - s.nb) * p_.b + (p_.m - s.nw) * p_.w +
                                         (s.nw < p_.m ? tail : 0.0));
    // Memory: F(j) starts only where what the microbatches before it still hold leaves room for
    // its activation. Each holds at least its activation until its offload ends or its B ends,
    // then M_W until its offload or its W ends (whichever choice and timing the completion makes:
    // the earliest instants of those ends below; a reload only adds). drops_ holds those
    // releases for the microbatches before the one at hand, by time.
    const bool memory = s.nf < p_.m && (p_.m + 1) * p_.act > p_.cap + kEps;
    if (memory) {
      drops_.clear();
      future_.clear();
      for (int i = s.nw; i < s.nf; ++i) add_releases(s, i);
    }
    double f_end = s.free;  // end of the last forward run so far in this estimate
    // The remaining B's run in order after `free`, and so do the W's, after those whose B ended;
    // the offloads of the microbatches not started, one at a time on the D2H channel from s.d2h.
    double b_last = s.free, w_last = s.free + (s.nb - s.nw) * p_.w, d2h_last = s.d2h;
    // Slot energy (Params::slot_act): from t0 on, each microbatch's activation and M_W hold
    // memory for at least what its ops still need; their slot-weighted sum fits in the time.
    const double t0 = s.free;
    const bool slots = p_.slot_act > 0 && s.nw < p_.m;
    double held_act = 0, held_mw = 0;
    if (slots) {
      double w_end = t0;
      for (int j = s.nw; j < s.nb; ++j) {
        w_end = std::max(w_end, s.b_end(j)) + p_.w;
        held_mw += w_end - t0;
      }
    }
    // The last k B ends (lower bounds; the placed ones as they are), for their tails (last_tails.h).
    std::array<double, kMaxLastTailMicrobatches> last_k{};
    const int k = p_.tails.k, first_k = p_.m - k;
    for (int j = std::max(first_k, 0); j < s.nb && k > 0; ++j) last_k[static_cast<std::size_t>(j - first_k)] = s.b_end(j);
    for (int j = s.nb; j < p_.m; ++j) {
      double release;
      if (j < s.nf) {
        release = s.b_release(j);
      } else {
        double start = std::max(f_end, head_f(j));
        if (memory) {
          const double fits = room_for_forward(j - s.nw);
          if (!(fits < kInf)) return kInf;  // what is held before it never leaves room
          start = std::max(start, fits);
        }
        f_end = start + p_.f;
        release = f_end + p_.lat;
      }
      double eb = std::max({s.free, release, head_b(j)});
      if (j < s.nf && s.offload_end(j) == s.offload_end(j)) {
        eb = std::max(eb, s.reload_end(j) == s.reload_end(j) ? s.reload_end(j)
                          : s.forced(j)                  ? s.forced_from(j) + p_.rel
                                                         : s.offload_end(j) + p_.rel);
      }
      if (slots) {
        const double bs = std::max(b_last, eb);  // B(j) after B(j - 1) too (FIFO, one device)
        if (j >= s.nf) {
          held_act += p_.f + p_.b + (p_.offloadable ? std::min(p_.lat, p_.off + p_.rel) : p_.lat);
        } else if (!(s.offload_end(j) == s.offload_end(j))) {
          held_act += bs + p_.b - t0;  // kept: held until its B ends
        } else {
          held_act += std::max(0.0, s.offload_end(j) - t0) +
                      (s.reload_end(j) == s.reload_end(j) ? bs + p_.b - t0 : p_.b + std::min(bs - t0, p_.rel));
        }
        held_mw += p_.w;
      }
      b_last = std::max(b_last, eb) + p_.b;
      if (k > 0 && j >= first_k) last_k[static_cast<std::size_t>(j - first_k)] = b_last;
      w_last = std::max(w_last, b_last) + p_.w;
      if (memory && j >= s.nf) {
        d2h_last = std::max(d2h_last, f_end) + p_.off;
        future_.push_back({f_end, b_last, w_last, d2h_last, std::max(s.d2h, f_end) + p_.off});
      }
      const int rest = p_.m - j;
      lb = std::max({lb, eb + rest * (p_.b + p_.w) + tail, eb + rest * p_.b + p_.tail_b});
    }
    if (s.nb < p_.m && k > 0) lb = std::max(lb, last_tail(p_.tails, last_k.data()));
    if (slots) {
      // While F(j) runs, at most j - nb + 1 activations are held (microbatches nb..j), and while
      // B(m - i) runs at most i (m - i..m - 1): slots that stay empty then.
      // And while any M_W is held, at most those beside it (slot_w_held): g(t) = slot_act per
      // activation + slot_w_held if an M_W is held is at most 1 at every instant. Every W that
      // runs before B(m - 1) holds its M_W while it runs; d of the P pending W's but the last may
      // run after B(m - 1) instead (the makespan then has d + 1 W's after it), and then their
      // M_W's are held while B(m - 1) runs: the least over d.
      if (s.nb < p_.m) {
        const int k_slots = static_cast<int>(std::lround(1.0 / p_.slot_act));
        const double c = p_.slot_w_held;
        const int pending = p_.m - 1 - s.nw;  // W's before the last one
        // F(nb) with nothing held and no M_W (every B before it has its W done): its own only.
        double fill = 0;
        for (int j = s.nf; j < p_.m && j - s.nb + 1 < k_slots; ++j) {
          const int n = j - s.nb + 1;
          const bool alone = j == s.nb && s.nw == s.nb;
          fill += p_.f * std::max(0.0, 1.0 - n * p_.slot_act - (alone ? 0.0 : c));
        }
        double drain = 0;  // B(m - i), i >= 2: M_W's may be held beside it
        for (int i = 2; i <= p_.m - s.nb && i < k_slots; ++i) drain += p_.b * std::max(0.0, 1.0 - i * p_.slot_act - c);
        const double acts = t0 + p_.slot_act * held_act + fill + drain;
        double value = acts + c * pending * p_.w + p_.b * (1.0 - p_.slot_act) + std::max(p_.tail_b, p_.w + p_.tail_w);
        for (int d = 1; d <= pending; ++d) {
          value = std::min(value, acts + c * ((pending - d) * p_.w + p_.b) + p_.b * std::max(0.0, 1.0 - p_.slot_act - c) +
                                      std::max(p_.tail_b, (d + 1) * p_.w + p_.tail_w));
        }
        lb = std::max(lb, value);
      }
      lb = std::max(lb, t0 + p_.slot_act * held_act + p_.slot_mw * held_mw + p_.tail_w);
    }
    return lb;
  }

  // lower_bound's memory releases of microbatch i (s.nw <= i < s.nf: its W has not ended).
  void add_releases(const PartialSchedule& s, int i) const {
    if (i < s.nb) {  // B ended: the rest went then, M_W goes when W ends
      add_drop(-kInf, p_.act - p_.mw);
      add_drop(std::max(s.free, s.b_end(i)) + p_.w, p_.mw);
      return;
    }
    if (s.offload_end(i) == s.offload_end(i)) {  // offloaded: all of it at the offload's end
      add_drop(s.offload_end(i), p_.act);
      return;
    }
    const double b_end = std::max({s.free, s.b_release(i), head_b(i)}) + p_.b;
    add_drop(b_end, p_.act - p_.mw);
    add_drop(b_end + p_.w, p_.mw);
  }
  void add_drop(double t, double bytes) const {
    const std::pair<double, double> d{t, bytes};
    drops_.insert(std::upper_bound(drops_.begin(), drops_.end(), d), d);
  }
  // The earliest instant at which a forward fits after `held` microbatches whose W has not ended
  // (each added its activation) that release at most what released_by counts by then; kInf:
  // never. released_by is nondecreasing in t, so a binary search over the instants where it can
  // change finds it.
  double room_for_forward(int held) const {
    const double need = (held + 1) * p_.act - p_.cap - kEps;  // bytes that must have been released
    if (need <= 0) return -kInf;
    std::vector<double>& cand = cand_;
    cand.clear();
    for (const auto& d : drops_) cand.push_back(d.first);
    for (const FutureMb& fm : future_) {
      cand.push_back(fm.b_end);
      cand.push_back(fm.w_end);
      if (p_.offloadable) cand.push_back(fm.channel_off_end);
    }
    std::sort(cand.begin(), cand.end());
    std::size_t lo = 0, hi = cand.size();  // first index whose release reaches need
    while (lo < hi) {
      const std::size_t mid = (lo + hi) / 2;
      if (released_by(cand[mid]) >= need) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    return lo < cand.size() ? cand[lo] : kInf;
  }

  // An upper bound on the bytes released by t: the history's drops_ by then, and of the future
  // microbatches (future_, in order), a kept one's activation less M_W at its B's earliest end
  // and M_W at its W's, and up to q of them, whose offloads can have ended by t, all of it, q
  // the most offloads that the D2H channel (free from s.d2h, FIFO after each forward) can end by
  // t. Which q is the completion's choice: the largest gains are counted.
  double released_by(double t) const {
    double r = 0;
    for (const auto& [dt, bytes] : drops_) {
      if (dt > t + kEps) break;
      r += bytes;
    }
    int q = 0;
    if (p_.offloadable) {
      for (const FutureMb& fm : future_) {
        if (fm.channel_off_end > t + kEps) break;
        ++q;
      }
    }
    std::vector<double>& gains = gains_;
    gains.clear();
    for (const FutureMb& fm : future_) {
      const double kept = (fm.b_end <= t + kEps ? p_.act - p_.mw : 0.0) + (fm.w_end <= t + kEps ? p_.mw : 0.0);
      r += kept;
      if (q > 0 && fm.own_off_end <= t + kEps) gains.push_back(p_.act - kept);
    }
    if (q > 0) {
      const std::size_t k = std::min(gains.size(), static_cast<std::size_t>(q));
      std::partial_sort(gains.begin(), gains.begin() + static_cast<std::ptrdiff_t>(k), gains.end(),
                        std::greater<double>());
      for (std::size_t i = 0; i < k; ++i) r += gains[i];
    }
    return r;
  }

  bool dominated(const PartialSchedule& s) {
    std::vector<std::int64_t>& key = key_;  // scratch: no allocation per call once grown
    std::vector<double>& times = times_;
    key.assign({s.nf, s.nb, s.nw, s.block_w});
    for (int j = s.nb; j < s.nf; ++j) {
      key.push_back(s.offload_end(j) == s.offload_end(j) ? (s.placed(j) == s.placed(j) ? 2 : 1) : 0);
    }
    times.assign({s.free, s.makespan, s.d2h, s.h2d});
    for (int j = s.nb; j < s.nf; ++j) {
      times.push_back(s.f_end(j));
      times.push_back(s.b_release(j));
      times.push_back(s.offload_end(j) == s.offload_end(j) ? s.offload_end(j) : 0.0);
      // A forced reload: a later deadline and an earlier earliest start leave more choice.
      times.push_back(s.forced(j) ? -s.placed(j) : 0.0);
      times.push_back(s.forced(j) ? s.forced_from(j) : 0.0);
    }
    for (int j = s.nw; j < s.nb; ++j) times.push_back(s.b_end(j));
    // The last k microbatches' tail reads their B ends when B(m-1) is placed (those before nw).
    if (const int k = p_.tails.k; k > 0 && s.nb < p_.m) {
      for (int j = std::max(p_.m - k, 0); j < std::min(s.nw, s.nb); ++j) times.push_back(s.b_end(j));
    }
    // Placed reloads that a later one could still pull back (earliest_chain), and how far.
    double reach = kInf;
    {
      double limit = s.h2d;  // no later reload starts before this (its earliest start)
      for (int j = s.nb; j < s.nf; ++j) {
        if (s.forced(j)) {  // forced reloads may move back to their earliest starts
          limit = std::min(limit, s.forced_from(j));
          reach = std::min(reach, s.forced_from(j));
        }
      }
      for (int k = s.nb - 1; k >= 0; --k) {
        if (!(s.offload_end(k) == s.offload_end(k))) continue;
        const double start = s.placed(k);
        if (!(start == start) || start + p_.rel <= limit + kEps) break;
        key.push_back(k);
        times.push_back(start);
        limit -= p_.rel;
        reach = std::min(reach, limit);
      }
    }
    auto found = memo_.find(key);
    if (found == memo_.end()) found = memo_.emplace(key, std::vector<Entry>{}).first;
    auto& entries = found->second;
    for (const Entry& e : entries) {
      if (!no_later_everywhere(e.times.data(), times.data(), times.size(), kEps, hint_)) continue;
      // Memory no fuller at every instant a future reload could cover.
      const double from = std::min({s.free - p_.rel, e.free - p_.rel, reach, e.reach});
      const bool no_fuller = no_fuller_from(e.memory, s.memory, from);
      if (no_fuller) return true;
    }
    if (entries.size() >= kEntriesPerKey) {  // full: the new state takes an old one's place
      Entry& old = entries[next_slot_++ % kEntriesPerKey];  // assigned field by field: its buffers are reused
      old.times = times;
      old.memory = s.memory;
      old.free = s.free;
      old.reach = reach;
      return false;
    }
    entries.push_back({times, s.memory, s.free, reach});
    return false;
  }

  // One node: a leaf updates the best; otherwise, unless pruned, its children (the next B, the
  // next W, the next F at each start and level) are searched, best bound first.
  void dfs(const PartialSchedule& s, std::size_t depth = 0) {
    count_node();
    if (s.nw == p_.m) {
      record_leaf(s);
      return;
    }
    if (prune_ && (lower_bound(s) >= best_ - kEps || dominated(s))) return;
    if (levels_.size() <= depth) levels_.emplace_back();  // a deque: deeper levels never move it
    Children& children = levels_[depth];
    children.size = 0;
    if (s.nb < s.nf) push_backward(s, children);
    if (s.nw < s.nb) push_weight_grad(s, children);
    if (s.nf < p_.m) {
      if (p_.spec_first) {
        spec_forwards(s, depth, children);
      } else {
        free_forwards(s, children);
      }
    }
    search_children(children, depth);
  }

  // Counts a node; throws Stop at the node limit or, checked every 1024 nodes, the time limit and
  // the stop flag.
  void count_node() {
    if (++nodes_ > limit_) throw Stop{};
    if (nodes_ % 1024 != 0) return;
    if (stop_ && stop_->load(std::memory_order_relaxed)) throw Stop{};
    if (seconds_ > 0 && std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count() > seconds_) {
      throw Stop{};
    }
  }

  // A complete relaxed schedule: the best so far if its makespan is below it.
  void record_leaf(const PartialSchedule& s) {
    if (s.makespan < best_) {
      best_ = s.makespan;
      if (record_) best_leaf_ = s;
      if (best_ <= floor_) throw AtFloor{};
    }
  }

  // The children in the order of their lower bounds, each searched unless the bound prunes it
  // (and then all later ones).
  void search_children(Children& children, std::size_t depth) {
    std::vector<std::pair<double, std::size_t>>& order = children.order;
    order.clear();
    for (std::size_t k = 0; k < children.size; ++k) order.emplace_back(lower_bound(children.states[k]), k);
    std::sort(order.begin(), order.end());
    for (const auto& [lb, k] : order) {
      if (prune_ && lb >= best_ - kEps) break;
      dfs(children.states[k], depth + 1);
    }
  }

  // B(nb): after its F and the latency, and, offloaded, after a reload that fits just in time.
  void push_backward(const PartialSchedule& s, Children& children) {
    const int j = s.nb;
    double t = std::max({s.free, s.b_release(j), head_b(j)});
    PartialSchedule& c = children.add(s);
    const bool offloaded = s.offload_end(j) == s.offload_end(j);
    if (offloaded) t = reload_for_backward(s, j, t, c);
    if (t == t) {
      const double end = t + p_.b;
      add_event(c.memory, end, -(p_.act - p_.mw));
      c.b_end(c.nb) = end;
      c.nb += 1;
      c.block_w = 0;
      c.free = end;
      c.makespan = std::max(c.makespan, end + p_.tail_b);
      if (c.nb == p_.m) c.makespan = std::max(c.makespan, p_.last_tail_of(c, end));
    } else {
      --children.size;  // no room for its reload, ever
    }
  }

  // The start of B(j), offloaded, not before t: after its reload, which c gets placed (with the
  // earlier reloads it pulls back). NaN: no room for the reload, ever.
  double reload_for_backward(const PartialSchedule& s, int j, double t, PartialSchedule& c) {
    if (s.reload_end(j) == s.reload_end(j)) {
      return std::max(t, s.reload_end(j));  // its reload started before the node: it is in memory
    }
    if (s.forced(j)) return pull_forced_reload(s, j, t, c);
    const double reload_from = std::max(s.offload_end(j), s.h2d);
    Pulls& pulls = pulls_;
    t = earliest_chain(s, j, std::max(t, reload_from + p_.rel), pulls);
    if (t == t) {
      place_reload(c, j, t, pulls);
      c.h2d = reload_from + p_.rel;
    }
    return t;
  }

  // The start of B(j), not before t, whose reload a waiting forward forced to start by its
  // deadline (spec rules): it may also start earlier, from its earliest start on, if memory holds
  // it there (and the reloads before it, pulled back down the chain), so that its B starts
  // earlier. Placed in c either way.
  double pull_forced_reload(const PartialSchedule& s, int j, double t, PartialSchedule& c) {
    const double deadline = s.placed(j);
    remove_event(c.memory, deadline, p_.act);
    c.placed(j) = std::nan("");
    Pulls& pulls = pulls_;
    const double early = earliest_chain(c, j, std::max(t, s.forced_from(j) + p_.rel), pulls);
    if (early == early && early - p_.rel <= deadline + kEps) {
      place_reload(c, j, early, pulls);
      t = early;
    } else {  // it stays at its deadline
      add_event(c.memory, deadline, p_.act);
      c.placed(j) = deadline;
      t = std::max(t, deadline + p_.rel);
    }
    c.forced_from(j) = std::nan("");
    return t;
  }

  // W(nw): after its B.
  void push_weight_grad(const PartialSchedule& s, Children& children) {
    const double end = std::max(s.free, s.b_end(s.nw)) + p_.w;
    PartialSchedule& c = children.add(s);
    add_event(c.memory, end, -p_.mw);
    c.w_end(c.nw) = end;
    c.nw += 1;
    if (c.block_w >= 0) ++c.block_w;
    c.free = end;
    c.makespan = std::max(c.makespan, end + p_.tail_w);
  }

  // The free model: F(nf) at level 0 or 1, as early as memory allows or at any later offload end.
  void free_forwards(const PartialSchedule& s, Children& children) {
    const double t0 = earliest_fit(s.memory, std::max(s.free, head_f(s.nf)));
    if (!(t0 == t0)) return;
    std::vector<double>& starts = children.starts;
    starts.assign(1, t0);
    for (const MemoryEvent& e : s.memory) {
      if (e.t > t0 + kEps && e.delta < 0 && e.t > starts.back() + kEps) starts.push_back(e.t);
    }
    for (double t : starts) push_forward(s, t, children);
  }

  // The reload of j placed to end at `end`, with the earlier reloads moved as earliest_chain
  // said (`pulls`).
  void place_reload(PartialSchedule& c, int j, double end, const Pulls& pulls) const {
    for (const auto& [k, start] : pulls) {
      remove_event(c.memory, c.placed(k), p_.act);
      add_event(c.memory, start, p_.act);
      c.placed(k) = start;
    }
    add_event(c.memory, end - p_.rel, p_.act);
    c.placed(j) = end - p_.rel;
  }

  // Appends F(nf) starting at t, at level 0 and (offloadable) at level 1; with pair releases,
  // while B(nf - 1) has not started, once per release pair of (nf - 1, nf) (pair_releases.h).
  void push_forward(const PartialSchedule& s, double t, Children& children) {
    const double end = t + p_.f;
    const int k = s.nf, j = k - 1;
    std::vector<PairRelease>& releases = releases_;
    if (!p_.pairs.empty() && j >= s.nb) {
      pair_releases(p_.pairs, p_.comm, s.f_end(j), end, s.b_release(j), end + p_.lat, releases);
    } else {
      releases.assign(1, {std::nan(""), end + p_.lat});
    }
    for (const PairRelease& r : releases) {
      auto start = [&](PartialSchedule& c) {
        add_event(c.memory, t, p_.act);
        c.f_end(k) = end;
        c.b_release(k) = r.k;
        if (r.j == r.j) c.b_release(j) = r.j;
        c.nf += 1;
        c.free = end;
        c.block_w = -1;
      };
      if (p_.offloadable) {
        PartialSchedule& o = children.add(s);
        start(o);
        const double oe = std::max(end, s.d2h) + p_.off;
        add_event(o.memory, oe, -p_.act);
        o.offload_end(k) = oe;
        o.d2h = oe;
      }
      start(children.add(s));
    }
  }

  // The block of the last B and the W's after it, moved later by delta (its B waited longer
  // for its input): their memory releases and the device's free time move with it.
  void shift_block(const PartialSchedule& s, double delta, PartialSchedule& c) const {
    const int jb = s.nb - 1;
    double t = s.b_end(jb);
    remove_event(c.memory, t, -(p_.act - p_.mw));
    add_event(c.memory, t + delta, -(p_.act - p_.mw));
    c.makespan = std::max(c.makespan, t + delta + p_.tail_b);
    if (jb == p_.m - 1) c.makespan = std::max(c.makespan, p_.last_tail_of(s, t + delta));
    for (int i = 0; i < s.block_w; ++i) {
      t = t + p_.w;
      remove_event(c.memory, t, -p_.mw);
      add_event(c.memory, t + delta, -p_.mw);
      c.makespan = std::max(c.makespan, t + delta + p_.tail_w);
      c.w_end(s.nw - s.block_w + i) += delta;
    }
    c.b_end(jb) += delta;
    c.free = s.free + delta;
  }

  // Reloads that must have started by the instants in [t0, tau) for a forward to wait there:
  // 1 placed in c (forced), 0 no forward waits so, -1 nothing to force can be proven (the
  // forward may wait, unforced).
  int force_blocked(PartialSchedule& c, double t0, double tau) const {
    std::vector<int> pend;
    for (int k = c.nb; k < c.nf; ++k) {
      const bool offloaded = c.offload_end(k) == c.offload_end(k);
      const bool reloading = c.placed(k) == c.placed(k) || c.reload_end(k) == c.reload_end(k);
      if (offloaded && !reloading) pend.push_back(k);
    }
    std::vector<double> deadline(pend.size(), kInf);
    std::size_t most = 0;
    auto at = [&](double x) {
      const double mem = memory_for_forward(c.memory, x);
      std::size_t need = 0;
      while (mem + p_.act * static_cast<double>(need + 1) <= p_.cap + kEps && need <= pend.size()) ++need;
      if (need > pend.size()) return false;
      for (std::size_t q = 0; q < need; ++q) deadline[q] = std::min(deadline[q], x);
      most = std::max(most, need);
      return true;
    };
    if (!at(t0)) return 0;
    for (const MemoryEvent& e : c.memory) {
      if (e.t > t0 + kEps && e.t < tau - kEps && e.delta < 0 && !at(e.t)) return 0;
    }
    if (most == 0) return 1;
    std::vector<double> start(most);
    for (std::size_t q = most; q-- > 0;) {
      start[q] = q + 1 < most ? std::min(deadline[q], start[q + 1] - p_.rel) : deadline[q];
    }
    // A placed reload still to end after the first forced start: pulling it is not modelled.
    for (int k = c.nb - 1; k >= 0; --k) {
      if (!(c.offload_end(k) == c.offload_end(k))) continue;
      if (c.placed(k) == c.placed(k) && c.placed(k) + p_.rel > start[0] + kEps) return -1;
      break;
    }
    double e = c.h2d;
    std::vector<double> from(most);
    for (std::size_t q = 0; q < most; ++q) {
      from[q] = std::max(e, c.offload_end(pend[q]));
      if (start[q] < from[q] - kEps) return 0;
      e = from[q] + p_.rel;
    }
    // Each starts strictly before its deadline (at equal times a forward's start comes before a
    // reload's, spec 4), so it must fit in the memory just before: what is released at the
    // deadline itself does not count.
    Profile mem = c.memory;
    for (std::size_t q = 0; q < most; ++q) {
      double before = 0;
      for (const MemoryEvent& ev : mem) {
        if (ev.t >= start[q] - kEps) break;
        before += ev.delta;
      }
      if (before + p_.act > p_.cap + kEps) return 0;
      add_event(mem, start[q], p_.act);
    }
    double value = 0;
    for (std::size_t k = 0; k < mem.size(); ++k) {
      value += mem[k].delta;
      if (k + 1 < mem.size() && mem[k + 1].t <= mem[k].t + kEps) continue;
      if (mem[k].t >= start[0] - kEps && value > p_.cap + kEps) return 0;
    }
    c.memory = std::move(mem);
    for (std::size_t q = 0; q < most; ++q) {
      c.placed(pend[q]) = start[q];
      c.forced_from(pend[q]) = from[q];
    }
    c.h2d = e;
    return 1;
  }

  // The first stage under the spec's rules: a forward has no input to wait for, so it starts
  // when the op before it ends, unless memory holds it back (then until an offload ends, with
  // enough reloads started to fill memory), or unless the last B waited longer for its input
  // (the block of that B and its W's moves later, releases included).
  void spec_forwards(const PartialSchedule& s, std::size_t depth, Children& children) {
    if (bases_.size() <= depth) bases_.emplace_back();
    Children& bases = bases_[depth];
    bases.size = 0;
    bases.add(s);
    if (s.block_w >= 0) {
      for (const MemoryEvent& e : s.memory) {
        if (e.t > s.free + kEps && e.delta < 0 && e.t > bases.states[bases.size - 1].free + kEps) {
          shift_block(s, e.t - s.free, bases.add(s));
        }
      }
    }
    for (std::size_t k = 0; k < bases.size; ++k) {
      const PartialSchedule& b = bases.states[k];
      const double t0 = earliest_fit(b.memory, std::max(b.free, head_f(b.nf)));
      if (!(t0 == t0)) continue;
      push_forward(b, t0, children);
      double last = t0;
      for (const MemoryEvent& e : b.memory) {
        if (!(e.t > last + kEps && e.delta < 0)) continue;
        last = e.t;
        PartialSchedule& c = tmp_;
        c = b;
        const int r = force_blocked(c, t0, e.t);
        if (r == 0) continue;
        if (memory_for_forward(c.memory, e.t) + p_.act > p_.cap + kEps) continue;  // still waits: a later end
        push_forward(c, e.t, children);
      }
    }
  }

  double head_f(int j) const { return j < static_cast<int>(p_.head_f.size()) ? p_.head_f[j] : 0.0; }
  double head_b(int j) const { return j < static_cast<int>(p_.head_b.size()) ? p_.head_b[j] : 0.0; }

  const Params& p_;
  double best_;
  double floor_;
  bool below_floor_ = false;
  std::int64_t limit_;
  double seconds_;
  bool prune_;
  bool record_;
  const std::atomic<bool>* stop_;
  PartialSchedule best_leaf_;
  std::chrono::steady_clock::time_point start_;
  std::int64_t nodes_ = 0;
  std::size_t next_slot_ = 0;
  std::size_t hint_ = 0;  // dominated(): the coordinate that last ruled an entry out (no_later_everywhere)
  mutable std::vector<std::pair<double, double>> drops_;  // lower_bound's scratch: (time, bytes released)
  struct FutureMb {
    double f_end, b_end, w_end;  // earliest ends of a microbatch whose F is not placed yet
    // Its offload's earliest end on the D2H channel after those of the microbatches before it,
    // and alone (both only where the stage can offload).
    double channel_off_end, own_off_end;
  };
  mutable std::vector<FutureMb> future_;  // lower_bound's scratch, in microbatch order
  mutable std::vector<double> cand_, gains_;  // room_for_forward's and released_by's scratch
  std::vector<std::int64_t> key_;  // dominated's scratch
  std::vector<double> times_;
  struct KeyHash {
    std::size_t operator()(const std::vector<std::int64_t>& key) const {
      std::uint64_t h = 1469598103934665603ull;  // FNV-1a over the values
      for (std::int64_t v : key) h = (h ^ static_cast<std::uint64_t>(v)) * 1099511628211ull;
      return static_cast<std::size_t>(h);
    }
  };
  std::unordered_map<std::vector<std::int64_t>, std::vector<Entry>, KeyHash> memo_;
  std::deque<Children> levels_;  // dfs's children per depth
  std::deque<Children> bases_;   // spec_forwards' bases per depth
  PartialSchedule tmp_;          // spec_forwards' scratch state, used before any recursion
  std::vector<PairRelease> releases_;  // push_forward's scratch, used before any recursion
  Pulls pulls_;                  // push_backward's scratch for earliest_chain's moves
  mutable Profile chain_mem_;    // earliest_chain's scratch
};

bool applies(const Instance& inst, const BoundProblem& p, int s) {
  if (s < 0 || s >= p.S || p.types != 3 || !(p.room[s] == p.room[s])) return false;
  for (int k = 0; k < p.S; ++k) {
    if (k != s && p.device_of[k] == p.device_of[s]) return false;  // not alone on its device
  }
  for (double r : inst.offload_levels) {
    if (r != 0.0 && r != 1.0) return false;
  }
  return true;
}

// Stage s's F and B heads from a node's heads [op] (empty, or NaN for an op: 0).
void stage_heads(const BoundProblem& p, int s, const std::vector<double>& head, std::vector<double>& head_f,
                 std::vector<double>& head_b) {
  head_f.assign(static_cast<std::size_t>(p.m), 0.0);
  head_b.assign(static_cast<std::size_t>(p.m), 0.0);
  if (head.empty()) return;
  for (int j = 0; j < p.m; ++j) {
    const double hf = head[p.op(0, s, j)], hb = head[p.op(1, s, j)];
    head_f[j] = hf == hf ? hf : 0.0;
    head_b[j] = hb == hb ? hb : 0.0;
  }
}

// The model's data for stage s, with the node's heads [op] (empty: none), under `rules`.
Params params(const Instance& inst, const BoundProblem& p, int s, const std::vector<double>& head,
              StartRules rules = StartRules::kFree, bool pairs = false, bool tails = false) {
  Params q;
  q.m = p.m;
  q.f = p.dur[0 * p.S + s];
  q.b = p.dur[1 * p.S + s];
  q.w = p.dur[2 * p.S + s];
  q.act = p.activation[s];
  q.mw = p.hold_w[s];
  q.cap = p.room[s] + p.activation[s];
  if (q.act > 0 && q.cap > 0) {
    const int k = static_cast<int>(std::floor((q.cap + kEps) / q.act));
    if (k >= 1 && k < q.m) {
      q.slot_act = 1.0 / k;
      if (q.mw > 0) {
        q.slot_mw = 1.0;
        for (int na = 0; na <= k; ++na) {
          const double nw = std::floor((q.cap + kEps - na * q.act) / q.mw);
          if (nw >= 1) q.slot_mw = std::min(q.slot_mw, (1.0 - na * q.slot_act) / nw);
        }
      }
      // The most activations that fit beside one M_W.
      const double beside = q.mw > 0 ? std::floor((q.cap + kEps - q.mw) / q.act) : k;
      q.slot_w_held = std::max(0.0, 1.0 - std::min<double>(k, std::max(0.0, beside)) * q.slot_act);
    }
  }
  q.offloadable = inst.stages[s].offloadable();
  q.off = p.offload_time[s];
  q.rel = p.reload_time[s];
  q.lat = p.latency[s];
  q.tail_b = p.tail[1 * p.S + s];
  q.tail_w = p.tail[2 * p.S + s];
  stage_heads(p, s, head, q.head_f, q.head_b);
  q.spec_first = rules == StartRules::kSpecFirstStage;
  if (pairs) q.pairs = pair_release_orders(p, s);
  q.comm = s + 1 < p.S ? p.comm_after[s] : 0.0;
  if (tails) q.tails = last_tail_choices(p, s);
  return q;
}

// Stage s's ops in the order of `leaf`'s timeline: F (with its level), B and W by start, and
// each reload right after the last op that ends by the reload's start. The spec requests a
// reload when the op before it in the list ends, so the request comes no later than the relaxed
// start (placed just before the op that starts after it, the request would wait for that op's
// predecessor to end and start late: on offload-slow-pcie-4x8 the local search then never got
// from the order to the optimum, where with this placement it takes about 300 simulations).
std::vector<Action> leaf_order(const Params& q, const PartialSchedule& leaf, int s) {
  struct Timed {
    double start;
    int rank;  // at equal starts: W, B, F (a W or B that ended its predecessor's block first)
    Action a;
  };
  std::vector<Timed> ops;
  std::vector<std::pair<double, Action>> reloads;
  for (int j = 0; j < leaf.nw; ++j) {
    const bool offloaded = leaf.offload_end(j) == leaf.offload_end(j);
    ops.push_back({leaf.f_end(j) - q.f, 2, make_f(s, j, offloaded ? 1.0 : 0.0)});
    ops.push_back({leaf.b_end(j) - q.b, 1, make_b(s, j)});
    ops.push_back({leaf.w_end(j) - q.w, 0, make_w(s, j)});
    if (offloaded) {
      const double r = leaf.placed(j) == leaf.placed(j) ? leaf.placed(j) : leaf.reload_end(j) - q.rel;
      reloads.push_back({r, Action{OpType::R, s, j, 1.0}});
    }
  }
  std::stable_sort(ops.begin(), ops.end(), [](const Timed& x, const Timed& y) {
    return x.start < y.start - kEps || (x.start <= y.start + kEps && x.rank < y.rank);
  });
  std::vector<Action> out;
  std::size_t r = 0;
  std::stable_sort(reloads.begin(), reloads.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  for (const Timed& t : ops) {
    const double end = t.start + (t.a.type == OpType::F ? q.f : t.a.type == OpType::B ? q.b : q.w);
    while (r < reloads.size() && reloads[r].first < end - kEps) out.push_back(reloads[r++].second);
    out.push_back(t.a);
  }
  while (r < reloads.size()) out.push_back(reloads[r++].second);
  return out;
}

SingleStageRelaxation run_search(const Params& q, const PartialSchedule& start, double cutoff, std::int64_t node_limit,
                                 double seconds, bool prune, int s = -1, double floor = -kInf,
                                 const std::atomic<bool>* stop = nullptr) {
  SingleStageRelaxation out;
  out.applicable = true;
  RelaxationSearch search(q, cutoff, node_limit, seconds, prune, s >= 0, floor, stop);
  out.finished = search.run(start);
  out.nodes = search.nodes();
  if (search.below_floor()) {
    out.below_floor = true;
    if (s >= 0) out.order = leaf_order(q, search.best_leaf(), s);
    return out;
  }
  // Less a hair, so that the pruning tolerance inside the search can never make it too large.
  if (out.finished) out.bound = std::min(search.best(), cutoff) - 1e-7;
  out.exact = out.finished && search.best() < cutoff;
  if (out.exact && s >= 0) out.order = leaf_order(q, search.best_leaf(), s);
  return out;
}

}  // namespace

bool single_stage_relaxation_applies(const Instance& inst, const BoundProblem& p, int s, StartRules rules) {
  return applies(inst, p, s) && (rules == StartRules::kFree || s == 0);
}

StartRules strongest_start_rules(const Instance& inst, const BoundProblem& p, int s) {
  return single_stage_relaxation_applies(inst, p, s, StartRules::kSpecFirstStage) ? StartRules::kSpecFirstStage
                                                                                  : StartRules::kFree;
}

SingleStageRelaxation single_stage_relaxation(const Instance& inst, const BoundProblem& p, int s,
                                              const std::vector<double>& head, double cutoff, std::int64_t node_limit,
                                              double seconds, bool prune, StartRules rules, bool pairs, double floor,
                                              const std::atomic<bool>* stop, bool tails) {
  if (!single_stage_relaxation_applies(inst, p, s, rules)) return {};
  const Params q = params(inst, p, s, head, rules, pairs, tails);
  return run_search(q, PartialSchedule(p.m), cutoff, node_limit, seconds, prune, s, floor, stop);
}

namespace {

// The search's start at a node. `history_only`: only what stage s itself did (its ops that
// started and their transfers); the node's time, the device's and channels' free times beyond
// the stage's own, its heads and the makespan so far are dropped, which only weakens the bound,
// so that every node with the same history shares one value.
PartialSchedule node_state(const BoundProblem& p, const Params& q, int s, const NodeTimes& node,
                           const NodeTransfers& nt, bool history_only) {
  PartialSchedule st(p.m);
  const int m = p.m;
  const int d = p.device_of[s], g = p.group_of_device[d];
  auto end_of = [&](int type, int j) { return node.end[p.op(type, s, j)]; };
  auto known = [](double x) { return x == x; };
  st.free = history_only ? 0.0 : node.device_free[d];
  st.makespan = history_only ? 0.0 : node.makespan_so_far;
  st.d2h = history_only ? 0.0 : nt.d2h_free[g];
  st.h2d = history_only ? 0.0 : nt.h2d_free[g];
  // Forwards that started (a prefix: F is FIFO), their offloads and reloads.
  while (st.nf < m && known(end_of(0, st.nf))) {
    const int j = st.nf, sj = s * m + j;
    const double fe = end_of(0, j);
    add_event(st.memory, fe - q.f, q.act, true);
    st.f_end(st.nf) = fe;
    st.b_release(st.nf) = fe + q.lat;  // the history's pairs are not branched on: their own chains only
    st.free = std::max(st.free, fe);
    double oe = std::nan(""), re = std::nan("");
    if (nt.level[sj] > 0) {
      oe = known(nt.offload_end[sj]) ? nt.offload_end[sj] : std::max(fe, st.d2h) + q.off;  // FIFO, as early as it can
      st.d2h = std::max(st.d2h, oe);
      add_event(st.memory, oe, -q.act);
      if (known(nt.reload_start[sj])) {
        re = known(nt.reload_end[sj]) ? nt.reload_end[sj] : nt.reload_start[sj] + q.rel;
        add_event(st.memory, nt.reload_start[sj], q.act, true);
        st.h2d = std::max(st.h2d, re);
      }
    }
    st.offload_end(st.nf) = oe;
    st.reload_end(st.nf) = re;
    ++st.nf;
  }
  while (st.nb < st.nf && known(end_of(1, st.nb))) {
    const double be = end_of(1, st.nb);
    add_event(st.memory, be, -(q.act - q.mw));
    st.b_end(st.nb) = be;
    st.free = std::max(st.free, be);
    st.makespan = std::max(st.makespan, be + q.tail_b);
    ++st.nb;
    if (st.nb == m) st.makespan = std::max(st.makespan, q.last_tail_of(st, be));
  }
  while (st.nw < st.nb && known(end_of(2, st.nw))) {
    const double we = end_of(2, st.nw);
    st.w_end(st.nw) = we;
    add_event(st.memory, we, -q.mw);
    st.free = std::max(st.free, we);
    st.makespan = std::max(st.makespan, we + q.tail_w);
    ++st.nw;
  }
  return st;
}

}  // namespace

SingleStageRelaxation single_stage_relaxation_at_node(const Instance& inst, const BoundProblem& p, int s,
                                                      const NodeTimes& node, const NodeTransfers& nt,
                                                      const std::vector<double>& head, double cutoff,
                                                      std::int64_t node_limit, bool pairs, bool tails) {
  if (!applies(inst, p, s)) return {};
  const Params q = params(inst, p, s, head, StartRules::kFree, pairs, tails);
  return run_search(q, node_state(p, q, s, node, nt, false), cutoff, node_limit, 0, true);
}

std::vector<double> single_stage_history_key(const Instance& inst, const BoundProblem& p, int s, const NodeTimes& node,
                                             const NodeTransfers& nt) {
  const Params q = params(inst, p, s, {});
  const PartialSchedule st = node_state(p, q, s, node, nt, true);
  std::vector<double> key{static_cast<double>(st.nf), static_cast<double>(st.nb), static_cast<double>(st.nw)};
  for (const MemoryEvent& e : st.memory) {
    key.push_back(e.t);
    key.push_back(e.delta);
  }
  for (int j = 0; j < st.nf; ++j) key.push_back(st.reload_end(j) == st.reload_end(j) ? st.reload_end(j) : -1.0);
  return key;
}

std::vector<double> single_stage_node_key(const Instance& inst, const BoundProblem& p, int s, const NodeTimes& node,
                                          const NodeTransfers& nt) {
  std::vector<double> key = single_stage_history_key(inst, p, s, node, nt);
  for (int j = 0; j < p.m; ++j) {
    const int sj = s * p.m + j;
    if (nt.level[sj] > 0) key.push_back(nt.offload_start[sj] == nt.offload_start[sj] ? 1.0 : 0.0);
  }
  return key;
}

std::vector<double> single_stage_node_params(const Instance& /*inst*/, const BoundProblem& p, int s,
                                             const NodeTimes& node, const NodeTransfers& nt,
                                             const std::vector<double>& head) {
  const int d = p.device_of[s], g = p.group_of_device[d];
  std::vector<double> out{node.device_free[d], node.makespan_so_far, nt.d2h_free[g], nt.h2d_free[g]};
  for (int type = 0; type < 2; ++type) {
    for (int j = 0; j < p.m; ++j) {
      const int o = p.op(type, s, j);
      if (node.end[o] == node.end[o]) continue;  // started: part of the history
      const double h = head.empty() ? 0.0 : head[o];
      out.push_back(h == h ? h : 0.0);
    }
  }
  return out;
}

SingleStageRelaxation single_stage_relaxation_of_history(const Instance& inst, const BoundProblem& p, int s,
                                                         const NodeTimes& node, const NodeTransfers& nt, double cutoff,
                                                         std::int64_t node_limit, StartRules rules, bool pairs,
                                                         bool tails) {
  if (!single_stage_relaxation_applies(inst, p, s, rules)) return {};
  const Params q = params(inst, p, s, {}, rules, pairs, tails);
  return run_search(q, node_state(p, q, s, node, nt, true), cutoff, node_limit, 0, true);
}

}  // namespace optpipe
