#include "heuristics/zb_greedy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "model/bytes.h"
#include "model/simulator.h"
#include "heuristics/order_utils.h"

namespace optpipe {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Time-following list scheduler state for one greedy run.
class Greedy {
 public:
  Greedy(const Instance& inst, const ZbGreedyOptions& opt) : inst_(inst), opt_(opt) {
    S_ = inst.num_stages();
    m_ = inst.microbatches;
    D_ = inst.num_devices();
    stages_ = inst.stages_by_device();
    next_.assign(3, std::vector<int>(S_, 0));
    end_.assign(3, std::vector<double>(static_cast<std::size_t>(S_) * m_, kInf));
    free_at_.assign(D_, 0.0);
    mem_.resize(D_);
    cap_.resize(D_);
    pending_w_.resize(D_);
    for (int d = 0; d < D_; ++d) {
      mem_[d] = inst.devices[d].static_memory;
      double largest = 0;
      for (int s : stages_[d]) largest = std::max(largest, inst.stages[s].activation);
      double cap = opt.ignore_memory ? kInf : inst.devices[d].memory_limit;
      if (opt.cap_activations) {
        cap = std::min(cap, inst.devices[d].static_memory + *opt.cap_activations * largest);
      }
      cap_[d] = cap;
    }
  }

  std::optional<Schedule> run(std::string* why) {
    Schedule sch = empty_schedule(inst_);
    const int total = inst_.num_compute_types() * S_ * m_;
    for (int placed = 0; placed < total; ++placed) {
      // The device that can start something earliest decides next (ties: lower id).
      int best_d = -1;
      Choice best;
      for (int d = 0; d < D_; ++d) {
        Choice c = choose(d);
        if (c.stage < 0) continue;
        if (best_d < 0 || c.start < best.start - kTimeEps) {
          best_d = d;
          best = c;
        }
      }
      if (best_d < 0) {
        *why = stuck_reason();
        return std::nullopt;
      }
      place(best_d, best, sch.devices[best_d]);
    }
    return sch;
  }

 private:
  struct Choice {
    OpType type = OpType::F;
    int stage = -1;
    double start = kInf;
  };

  double ready(OpType t, int s, int j) const {
    switch (t) {
      case OpType::F: return s == 0 ? 0.0 : end_[0][idx(s - 1, j)] + inst_.comm_after(s - 1);
      case OpType::B: {
        double r = end_[0][idx(s, j)];
        if (s + 1 < S_) r = std::max(r, end_[1][idx(s + 1, j)] + inst_.comm_after(s));
        return r;
      }
      default: return end_[1][idx(s, j)];
    }
  }
  std::size_t idx(int s, int j) const { return static_cast<std::size_t>(s) * m_ + j; }

  // What device d would run next and when; stage < 0 when nothing can ever run now.
  Choice choose(int d) const {
    const double t = free_at_[d];
    Choice b, f, w;
    for (int s : stages_[d]) {
      const int jb = next_[1][s];
      if (jb < m_ && next_[0][s] > jb) {
        const double r = ready(OpType::B, s, jb);
        if (r < kInf && (b.stage < 0 || r < b.start - kTimeEps || (std::fabs(r - b.start) <= kTimeEps && s > b.stage))) {
          b = {OpType::B, s, r};
        }
      }
      const int jf = next_[0][s];
      if (jf < m_) {
        const double r = ready(OpType::F, s, jf);
        const bool fits = mem_[d] + inst_.stages[s].activation + reserved_after_f(d, s) <= cap_[d] + kMemoryTolerance;
        if (r < kInf && fits &&
            (f.stage < 0 || r < f.start - kTimeEps || (std::fabs(r - f.start) <= kTimeEps && s > f.stage))) {
          f = {OpType::F, s, r};
        }
      }
    }
    if (!pending_w_[d].empty()) w = {OpType::W, pending_w_[d].front(), t};
    const double tb = std::max(t, b.start), tf = std::max(t, f.start);
    const bool b_now = b.stage >= 0 && tb <= t + kTimeEps;
    const bool f_now = f.stage >= 0 && tf <= t + kTimeEps;
    // 1. A ready B goes first (without prioritize_b, only when no F is ready).
    if (b_now && (opt_.prioritize_b || !f_now)) return {OpType::B, b.stage, tb};
    // 2. A ready F that fits.
    if (f_now) return {OpType::F, f.stage, tf};
    // 3. A pending W: memory is short (an F waits to fit), nothing else is coming, or the gap
    //    before the next op is long enough (or small gaps are filled too).
    if (w.stage >= 0) {
      const double next = std::min(b.stage >= 0 ? tb : kInf, f.stage >= 0 ? tf : kInf);
      const bool memory_short = f.stage < 0 && forward_blocked_by_memory(d);
      const double tw = inst_.duration(OpType::W, w.stage);
      if (memory_short || next == kInf || opt_.fill_small_gaps || next - t >= tw - kTimeEps) return w;
    }
    // 4. Wait for the next ready op.
    if (b.stage >= 0 && (f.stage < 0 || tb <= tf)) return {OpType::B, b.stage, tb};
    if (f.stage >= 0) return {OpType::F, f.stage, tf};
    if (w.stage >= 0) return w;
    return {};
  }

  // With round-trip admission: the activations that the microbatches in flight on device d
  // (F done at an earlier stage of d, not yet at a later one) still need there, once F(s, next)
  // has run; 0 otherwise.
  double reserved_after_f(int d, int s) const {
    if (!opt_.reserve_round_trip) return 0.0;
    double reserved = 0;
    int entered = 0;  // microbatches past the stages of d before the one looked at
    for (int t : stages_[d]) {
      const int done = next_[0][t] + (t == s ? 1 : 0);
      if (entered > done) reserved += (entered - done) * inst_.stages[t].activation;
      entered = std::max(entered, done);
    }
    return reserved;
  }

  bool forward_blocked_by_memory(int d) const {
    for (int s : stages_[d]) {
      const int j = next_[0][s];
      if (j < m_ && ready(OpType::F, s, j) < kInf &&
          mem_[d] + inst_.stages[s].activation + reserved_after_f(d, s) > cap_[d] + kMemoryTolerance) {
        return true;
      }
    }
    return false;
  }

  void place(int d, const Choice& c, std::vector<Action>& list) {
    const int s = c.stage;
    const int t = static_cast<int>(c.type);
    const int j = next_[t][s]++;
    const double start = std::max(free_at_[d], c.start);
    const double end = start + inst_.duration(c.type, s);
    end_[t][idx(s, j)] = end;
    free_at_[d] = end;
    switch (c.type) {
      case OpType::F:
        mem_[d] += inst_.stages[s].activation;
        list.push_back(make_f(s, j));
        break;
      case OpType::B:
        mem_[d] -= inst_.freed_by_b(s);
        list.push_back(make_b(s, j));
        if (inst_.split_backward) pending_w_[d].push_back(s);
        break;
      case OpType::W:
        mem_[d] -= inst_.freed_by_w(s);
        list.push_back(make_w(s, j));
        pending_w_[d].erase(pending_w_[d].begin());
        break;
      case OpType::R: break;
    }
  }

  std::string stuck_reason() const {
    std::ostringstream out;
    out << "the greedy scheduler cannot place another op within memory:";
    for (int d = 0; d < D_; ++d) {
      if (!forward_blocked_by_memory(d)) continue;
      out << " device " << d << " holds " << format_bytes(mem_[d]) << " of its " << format_bytes(cap_[d])
          << " budget and its next forward does not fit;";
    }
    return out.str();
  }

  const Instance& inst_;
  ZbGreedyOptions opt_;
  int S_ = 0, m_ = 0, D_ = 0;
  std::vector<std::vector<int>> stages_;
  std::vector<std::vector<int>> next_;        // [type][stage] next microbatch
  std::vector<std::vector<double>> end_;      // [type][s*m+j]
  std::vector<double> free_at_, mem_, cap_;
  std::vector<std::vector<int>> pending_w_;   // per device: stages whose B ran and W not, FIFO
};

}  // namespace

std::optional<Schedule> zb_greedy_schedule(const Instance& instance, const ZbGreedyOptions& options,
                                           std::string* why) {
  Greedy g(instance, options);
  std::optional<Schedule> sch = g.run(why);
  if (sch || options.reserve_round_trip) return sch;
  // Stuck: back off to round-trip admission.
  ZbGreedyOptions careful = options;
  careful.reserve_round_trip = true;
  std::string careful_why;
  Greedy again(instance, careful);
  sch = again.run(&careful_why);
  if (!sch) *why += " (and with round-trip admission: " + careful_why + ")";
  return sch;
}

Built ZbGreedy::build(const Instance& inst, const RunLimits& limits) const {
  const double p = inst.num_devices();
  const std::optional<double> caps[] = {p, 2 * p, std::nullopt};
  std::optional<Schedule> best;
  double best_makespan = kInf;
  std::string best_detail, last_why;
  int tried = 0;
  Simulator sim(inst);
  const SimOptions fast = SimOptions::quiet();
  for (const auto& cap : caps) {
    for (bool prioritize_b : {true, false}) {
      for (bool fill : {false, true}) {
        if (tried > 0 && limits.expired()) break;  // stopped: the best of the variants run so far
        ZbGreedyOptions o;
        o.cap_activations = cap;
        o.prioritize_b = prioritize_b;
        o.fill_small_gaps = fill;
        std::string why;
        auto sch = zb_greedy_schedule(inst, o, &why);
        ++tried;
        if (!sch) {
          last_why = why;
          continue;
        }
        const SimResult r = sim.run(*sch, fast);
        if (!r.feasible) continue;
        if (r.makespan < best_makespan - kTimeEps) {
          best_makespan = r.makespan;
          best = std::move(sch);
          std::ostringstream detail;
          detail << "budget " << (cap ? "min(limit, " + std::to_string(static_cast<int>(*cap / p)) + "p activations)" : std::string("= memory limit"))
                 << ", prioritize_b " << (prioritize_b ? "on" : "off") << ", fill small gaps "
                 << (fill ? "on" : "off");
          best_detail = detail.str();
        }
      }
    }
  }
  if (!best) return Built::fail("ZB greedy: " + (last_why.empty() ? std::string("no variant fits in memory") : last_why));
  return Built::ok(std::move(*best), best_detail + " (best of " + std::to_string(tried) + " variants)");
}

}  // namespace optpipe
