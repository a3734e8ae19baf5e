// Host and device core (hd.h) of memory_energy_bound (memory_energy_bound.h, which documents the
// bound, its proof and its complexity): plain arrays, the caller's scratch, no allocation.
// memory_energy_bound (memory_energy_bound.cc) wraps it for the scalar search; the batched bounds
// (kernels/batched_bounds_impl.h) call it per node.
//
// Layout: memory_energy_bound_core takes the stages under memory pressure one at a time as a
// MemoryEnergyStage, skips a stage whose optimistic value cannot beat the best so far, and
// otherwise takes the best of its windows [t1, T - q]: a few left ends t1 (best_window), for each
// a few right ends q (best_from), each window's energy (fill_prefix, window_energy) raised by its
// left and right deficits where they count (window_value).
#pragma once

#include "bounds/bound_view.h"
#include "bounds/hd.h"

namespace optpipe {

// Scratch doubles memory_energy_bound_core needs: m + 1 (prefix sums of the microbatches'
// energy in one window).
OPTPIPE_HD inline int memory_energy_scratch_doubles(const BoundProblemView& p) { return p.m + 1; }

// The left deficit of a window from t1: on [t1, h), fewer than c tokens can be in use; d is the
// missing token time, and T >= t (the finish of the forward whose head ends the region + its
// tail). d = 0 when the region does not count.
struct MemoryEnergyLeftDeficit {
  double d, h, t;
};

// The right deficit of a window ending at T - q: with u = T - t, on u in [q, u) fewer than c
// tokens can be in use; d is the missing token time, and T - u >= f (the finish of the op whose
// tail starts the region). d = 0 when the region does not count.
struct MemoryEnergyRightDeficit {
  double d, u, f;
};

// Stage s of memory_energy_bound_core at one node: its constants, where its microbatches stand at
// the node's time, and the occupancies and deficits its windows add up. Only for a stage under
// memory pressure (0 < tokens < m).
struct MemoryEnergyStage {
  const BoundProblemView& p;
  const double* end;             // [op]: the node's ends (NaN: not started)
  const NodeTransfersView* nt;   // null: no transfers decided
  const double* head;            // [op]
  const double* finish;          // [op]
  const double* offload_lb;      // [sj]: read only with nt
  int s, m, c;                   // c: the stage's tokens
  double F, B, off, rel;
  bool full;                     // it can offload a whole activation
  double now;
  int first_unstarted = 0;       // the first microbatch whose F has not started
  int first_open = 0;            // the first whose B has not ended by now
  int first_active = 0;          // the first still active after now (a prefix has ended, FIFO)
  bool split;
  int last_type;                 // a microbatch is active until this op of it ended
  double gamma, W;
  int extra;

  OPTPIPE_HD MemoryEnergyStage(const BoundProblemView& problem, const double* ends, const double* device_free,
                               const NodeTransfersView* transfers, const double* heads, const double* finishes,
                               const double* offload_lbs, int stage)
      : p(problem), end(ends), nt(transfers), head(heads), finish(finishes), offload_lb(offload_lbs), s(stage),
        m(problem.m), c(problem.tokens[stage]), F(problem.dur[0 * problem.S + stage]),
        B(problem.dur[1 * problem.S + stage]), off(problem.offload_time[stage]),
        rel(problem.reload_time[stage]), full(problem.offload_release[stage] < hd::inf()),
        now(transfers ? transfers->now : device_free[problem.device_of[stage]]), split(problem.types == 3),
        last_type(problem.types == 3 ? 2 : 1), gamma(problem.token_w_weight[stage]),
        W(problem.types == 3 ? problem.dur[2 * problem.S + stage] : 0.0), extra(problem.token_w_extra[stage]) {
    // The first microbatch whose F has not started, and the first whose B has not ended.
    while (first_unstarted < m && hd::known(end[p.op(0, s, first_unstarted)])) ++first_unstarted;
    while (first_open < m && hd::known(end[p.op(1, s, first_open)]) && end[p.op(1, s, first_open)] <= now) {
      ++first_open;
    }
    while (first_active < m && closed_by(first_active, now)) ++first_active;
  }

  // Occupancy of a microbatch whose F has not started.
  OPTPIPE_HD double occ_unstarted(int j) const {
    const double r = nt ? nt->level[s * m + j] : hd::nan();
    if (!hd::known(r)) return F + B + (full ? hd::min(p.latency[s], off + rel) : p.latency[s]);
    if (r >= 1.0) return F + B + off + rel;
    return F + B + hd::max(p.latency[s], r * (off + rel));
  }

  // Occupancy after t1 (>= now) of a microbatch whose F started and whose B has not ended.
  OPTPIPE_HD double occ_started(int j, double t1) const {
    const int sj = s * m + j;
    const double fb = finish[p.op(1, s, j)];
    const double r = nt ? nt->level[sj] : 0.0;  // without transfers: treat as not offloaded below
    if (!nt || !(r >= 1.0) || hd::known(nt->reload_start[sj])) {
      if (!nt && p.offload_release[s] < hd::inf()) return hd::max(0.0, hd::min(B, fb - t1));  // unknown: only B itself
      return hd::max(0.0, fb - t1);
    }
    const double e = offload_lb[sj];
    return hd::max(0.0, e - t1) + hd::max(0.0, hd::min(rel + B, fb - hd::max(t1, e)));
  }

  // Active at or after t: not yet ended its last op by t (a known end after t, or unknown).
  OPTPIPE_HD bool closed_by(int j, double t) const {
    const double e = end[p.op(last_type, s, j)];
    return hd::known(e) && e <= t;
  }

  // At most cap(k) = min(c, k + extra) tokens are in use while k microbatches are active.
  OPTPIPE_HD int cap(int k) const { return k <= 0 ? 0 : hd::min(c, k + extra); }

  // An optimistic value of every window below (no deduction, the latest start, the largest
  // right tail, the largest deficits): when it cannot beat the best so far, the stage is skipped.
  OPTPIPE_HD double optimistic_value() const {
    double t1_max = now, all = 0;
    for (int j = first_active; j < m; ++j) {
      if (j >= first_unstarted) {
        t1_max = hd::max(t1_max, head[p.op(0, s, j)]);
        all += occ_unstarted(j) / c;
      } else if (j >= first_open) {
        all += occ_started(j, now) / c;
      }
      all += gamma * W;
    }
    double q_max = 0;
    for (int back = 1; back <= 3 && m - back >= first_open; ++back) {
      q_max = hd::max(hd::max(q_max, p.op_tail(1, s, m - back)), split ? p.op_tail(2, s, m - back) : 0.0);
    }
    // t1 + left deficit / c <= the end of the left deficit region (at most c per unit of
    // time), which is at most the head of the c-th forward not started; likewise on the right.
    const int kl = hd::min(m - 1, first_unstarted + c - 1);
    const double left = first_unstarted < m ? hd::max(t1_max, head[p.op(0, s, kl)]) : t1_max;
    const double right = hd::max(q_max, p.op_tail(last_type, s, hd::max(first_active, m - c)));
    return left + all + right;
  }

  // Left deficit: on [t1, h_left), fewer than c tokens can be in use (the active microbatches
  // at t1 and the forwards not started whose head has passed).
  OPTPIPE_HD MemoryEnergyLeftDeficit left_deficit(double t1) const {
    int active = 0;
    for (int j = first_active; j < first_unstarted; ++j) active += !closed_by(j, t1);
    // T >= t_left: the region ends at the head of F(s, i), and T >= its finish + its tail.
    double d_left = 0, h_left = t1, t_left = 0;
    for (int i = first_unstarted; cap(active) < c && i < m; ++i, ++active) {
      const double next = hd::max(t1, head[p.op(0, s, i)]);
      d_left += (c - cap(active)) * (next - h_left);
      h_left = next;
      t_left = finish[p.op(0, s, i)] + p.op_tail(0, s, i);
    }
    if (cap(active) < c) d_left = 0, h_left = t1;  // never reaches c: not counted
    return {d_left, h_left, t_left};
  }

  // Microbatch j's part in token units in the window [t1, T - q]: its occupancy / c less what
  // lies before t1 or after T - q, plus gamma times its W execution.
  OPTPIPE_HD double part(int j, double t1, double q) const {
    double energy = 0;
    if (j >= first_open) {
      double e = -1;
      if (j < first_unstarted) {
        if (!(hd::known(end[p.op(1, s, j)]) && end[p.op(1, s, j)] <= t1)) e = occ_started(j, t1);
      } else {
        e = occ_unstarted(j) - hd::max(0.0, t1 - hd::max(now, head[p.op(0, s, j)]));
      }
      e -= hd::max(0.0, q - p.op_tail(1, s, j));
      if (e > 0) energy += e / c;
    }
    if (gamma > 0) {
      // Its W execution: after B(s, j)'s end (>= its finish), W long, ending by
      // T - tail(W(s, j)).
      const double fb = finish[p.op(1, s, j)];
      const double ew = W - hd::max(0.0, t1 - fb) - hd::max(0.0, q - p.op_tail(2, s, j));
      if (ew > 0) energy += gamma * ew;
    }
    return energy;
  }

  // Each microbatch's part in token units before the right deduction, as prefix sums: the
  // deduction only touches the last microbatches (tails fall with j, FIFO).
  OPTPIPE_HD void fill_prefix(double t1, double* prefix) const {
    prefix[first_active] = 0;
    for (int j = first_active; j < m; ++j) prefix[j + 1] = prefix[j] + part(j, t1, 0.0);
  }

  // The window [t1, T - q] in token units: Σ occupancy / c + gamma · Σ W executions; the parts
  // of the microbatches whose tails are at least q come from `prefix` (fill_prefix at t1).
  OPTPIPE_HD double window_energy(double t1, double q, const double* prefix) const {
    int js = m;
    while (js > first_active && (q > p.op_tail(1, s, js - 1) || (gamma > 0 && q > p.op_tail(2, s, js - 1)))) {
      --js;
    }
    double energy = prefix[js];
    for (int j = js; j < m; ++j) energy += part(j, t1, q);
    return energy;
  }

  // Right deficit: with u = T - t, microbatch j is active at t only if u > tail of its last op
  // (its end is at most T - that tail); on u in [q, u_right) fewer than c.
  OPTPIPE_HD MemoryEnergyRightDeficit right_deficit(double t1, double q) const {
    int act_r = 0, j = m - 1;
    for (; j >= first_active && p.op_tail(last_type, s, j) <= q; --j) act_r += !closed_by(j, t1);
    // The region starts at T - the tail of the last op of microbatch j, and T - that tail
    // >= f_right, the finish of that op.
    double d_right = 0, u_right = q, f_right = 0;
    for (; cap(act_r) < c && j >= first_active; --j) {
      if (closed_by(j, t1)) continue;
      const double next = hd::max(q, p.op_tail(last_type, s, j));
      d_right += (c - cap(act_r)) * (next - u_right);
      u_right = next;
      f_right = finish[p.op(last_type, s, j)];
      ++act_r;
    }
    if (cap(act_r) < c) d_right = 0, u_right = q;
    return {d_right, u_right, f_right};
  }

  // The bound of the window [t1, T - q] holding `energy`, with its deficits where they count,
  // given the best value so far.
  OPTPIPE_HD double window_value(double t1, double q, double energy, const MemoryEnergyLeftDeficit& left,
                                 const MemoryEnergyRightDeficit& right, double best) const {
    // A deficit counts only when its region lies in the window [t1, T - q], and both only
    // when the regions do not overlap; T >= known, t_left and f_right + u_right show it.
    const double base = t1 + energy + q;
    const double known_t = hd::max(hd::max(base, best), left.t);
    double v = base;
    const bool left_in = left.d > 0 && left.h + q <= known_t;
    const bool right_in = right.d > 0 && (t1 <= right.f || t1 + right.u <= known_t);
    if (left_in) v = hd::max(v, base + left.d / c);
    if (right_in) v = hd::max(v, base + right.d / c);
    if (left_in && right_in && (left.h <= right.f || left.h + right.u <= known_t)) {
      v = hd::max(v, base + (left.d + right.d) / c);
    }
    return v;
  }

  // The best of `best` and the windows from t1 to every right end: T - q for q the tail of B or
  // W of one of the last open microbatches (tails fall with j, FIFO); an occupancy that ends by
  // T - its tail may lie up to q - that tail after T - q. `prefix`: m + 1 doubles of scratch.
  OPTPIPE_HD_INLINE double best_from(double t1, double best, double* prefix) const {
    constexpr int kRightEnds = 3;
    const MemoryEnergyLeftDeficit left = left_deficit(t1);
    fill_prefix(t1, prefix);
    for (int back = 1; back <= kRightEnds && m - back >= first_open; ++back) {
      for (int of_w = 0; of_w < (gamma > 0 ? 2 : 1); ++of_w) {
        const double q = p.op_tail(of_w ? 2 : 1, s, m - back);
        const double energy = window_energy(t1, q, prefix);
        if (energy <= 0) continue;
        best = hd::max(best, window_value(t1, q, energy, left, right_deficit(t1, q), best));
      }
    }
    return best;
  }

  // The best of `best` and every window of the stage: left ends at the node's time and at the
  // heads of the first forwards not started.
  OPTPIPE_HD_INLINE double best_window(double best, double* prefix) const {
    constexpr int kLeftEnds = 8;  // the first ones: later windows lose the microbatches before them
    for (int k = first_unstarted; k <= m && k <= first_unstarted + kLeftEnds; ++k) {
      // Window from t1: the node's time, or the head of F(s, k). A microbatch not started whose
      // F's head is before t1 has at most t1 - head of its occupancy before t1.
      double t1 = now;
      if (k > first_unstarted) {
        if (k == m) break;
        t1 = hd::max(now, head[p.op(0, s, k)]);
      }
      best = best_from(t1, best, prefix);
    }
    return best;
  }
};

// memory_energy_bound on plain arrays. `end` [op] and `device_free` [d]: the node's times
// (NodeTimes); `nt` (null: nothing decided; then `offload_lb` is not read) its transfers; `head`,
// `finish` [op] and `offload_lb` [sj] from compute_heads_core with the same `nt`. `enough`: as in
// memory_energy_bound. `scratch`: memory_energy_scratch_doubles(p) doubles.
OPTPIPE_HD inline double memory_energy_bound_core(const BoundProblemView& p, const double* end,
                                                  const double* device_free, const NodeTransfersView* nt,
                                                  const double* head, const double* finish, const double* offload_lb,
                                                  double enough, double* scratch) {
  double* prefix = scratch;  // prefix sums of the microbatches' energy
  double best = 0;
  for (int s = 0; s < p.S; ++s) {
    const int c = p.tokens[s];
    if (c <= 0 || c >= p.m) continue;  // no pressure (or nothing fits: infeasible anyway)
    const MemoryEnergyStage stage(p, end, device_free, nt, head, finish, offload_lb, s);
    if (stage.first_active >= p.m) continue;
    // When no window of the stage can beat `enough` (or the best so far), skip it.
    if (stage.optimistic_value() <= hd::max(best, enough)) continue;
    best = stage.best_window(best, prefix);
  }
  return best;
}

}  // namespace optpipe
