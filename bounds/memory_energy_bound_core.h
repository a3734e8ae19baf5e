// Host and device core (hd.h) of memory_energy_bound (memory_energy_bound.h, which documents the
// bound, its proof and its complexity): plain arrays, the caller's scratch, no allocation.
// memory_energy_bound (memory_energy_bound.cc) wraps it for the scalar search; the batched bounds
// (kernels/batched_bounds_impl.h) call it per node.
#pragma once

#include "bounds/bound_view.h"
#include "bounds/hd.h"

namespace optpipe {

// Scratch doubles memory_energy_bound_core needs: m + 1 (prefix sums of the microbatches'
// energy in one window).
OPTPIPE_HD inline int memory_energy_scratch_doubles(const BoundProblemView& p) { return p.m + 1; }

// memory_energy_bound on plain arrays. `end` [op] and `device_free` [d]: the node's times
// (NodeTimes); `nt` (null: nothing decided; then `offload_lb` is not read) its transfers; `head`,
// `finish` [op] and `offload_lb` [sj] from compute_heads_core with the same `nt`. `enough`: as in
// memory_energy_bound. `scratch`: memory_energy_scratch_doubles(p) doubles.
OPTPIPE_HD inline double memory_energy_bound_core(const BoundProblemView& p, const double* end,
                                                  const double* device_free, const NodeTransfersView* nt,
                                                  const double* head, const double* finish, const double* offload_lb,
                                                  double enough, double* scratch) {
  const double inf = hd::inf();
  const int m = p.m;
  double* prefix = scratch;  // prefix sums of the microbatches' energy
  double best = 0;
  for (int s = 0; s < p.S; ++s) {
    const int c = p.tokens[s];
    if (c <= 0 || c >= m) continue;  // no pressure (or nothing fits: infeasible anyway)
    const double F = p.dur[0 * p.S + s], B = p.dur[1 * p.S + s];
    const double off = p.offload_time[s], rel = p.reload_time[s];
    const bool full = p.offload_release[s] < inf;
    const double now = nt ? nt->now : device_free[p.device_of[s]];
    // Occupancy of a microbatch whose F has not started.
    auto occ_unstarted = [&](int j) {
      const double r = nt ? nt->level[s * m + j] : hd::nan();
      if (!hd::known(r)) return F + B + (full ? hd::min(p.latency[s], off + rel) : p.latency[s]);
      if (r >= 1.0) return F + B + off + rel;
      return F + B + hd::max(p.latency[s], r * (off + rel));
    };
    // Occupancy after t1 (>= now) of a microbatch whose F started and whose B has not ended.
    auto occ_started = [&](int j, double t1) {
      const int sj = s * m + j;
      const double fb = finish[p.op(1, s, j)];
      const double r = nt ? nt->level[sj] : 0.0;  // without transfers: treat as not offloaded below
      if (!nt || !(r >= 1.0) || hd::known(nt->reload_start[sj])) {
        if (!nt && p.offload_release[s] < inf) return hd::max(0.0, hd::min(B, fb - t1));  // unknown: only B itself
        return hd::max(0.0, fb - t1);
      }
      const double e = offload_lb[sj];
      return hd::max(0.0, e - t1) + hd::max(0.0, hd::min(rel + B, fb - hd::max(t1, e)));
    };
    // The first microbatch whose F has not started, and the first whose B has not ended.
    int first_unstarted = 0;
    while (first_unstarted < m && hd::known(end[p.op(0, s, first_unstarted)])) ++first_unstarted;
    int first_open = 0;
    while (first_open < m && hd::known(end[p.op(1, s, first_open)]) && end[p.op(1, s, first_open)] <= now) {
      ++first_open;
    }
    const bool split = p.types == 3;
    const int last_type = split ? 2 : 1;  // a microbatch is active until this op of it ended
    // Active at or after t: not yet ended its last op by t (a known end after t, or unknown).
    auto closed_by = [&](int j, double t) {
      const double e = end[p.op(last_type, s, j)];
      return hd::known(e) && e <= t;
    };
    int first_active = 0;  // the first microbatch still active after now (a prefix has ended, FIFO)
    while (first_active < m && closed_by(first_active, now)) ++first_active;
    if (first_active >= m) continue;
    const double gamma = p.token_w_weight[s], W = split ? p.dur[2 * p.S + s] : 0.0;
    const int extra = p.token_w_extra[s];
    // At most cap(k) = min(c, k + extra) tokens are in use while k microbatches are active.
    auto cap = [&](int k) { return k <= 0 ? 0 : hd::min(c, k + extra); };
    // An optimistic value of every window below (no deduction, the latest start, the largest
    // right tail, the largest deficits): when it cannot beat `enough`, skip the stage.
    {
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
      if (left + all + right <= hd::max(best, enough)) continue;
    }
    // Right ends: T - q for q the tail of B or W of one of the last open microbatches (tails
    // fall with j, FIFO); an occupancy that ends by T - its tail may lie up to q - that tail
    // after T - q.
    constexpr int kRightEnds = 3;
    constexpr int kLeftEnds = 8;  // the first ones: later windows lose the microbatches before them
    for (int k = first_unstarted; k <= m && k <= first_unstarted + kLeftEnds; ++k) {
      // Window from t1: the node's time, or the head of F(s, k). A microbatch not started whose
      // F's head is before t1 has at most t1 - head of its occupancy before t1.
      double t1 = now;
      if (k > first_unstarted) {
        if (k == m) break;
        t1 = hd::max(now, head[p.op(0, s, k)]);
      }
      // Left deficit: on [t1, h_left), fewer than c tokens can be in use (the active microbatches
      // at t1 and the forwards not started whose head has passed).
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
      // Each microbatch's part in token units before the right deduction, as prefix sums: the
      // deduction only touches the last microbatches (tails fall with j, FIFO).
      auto part = [&](int j, double q) {
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
      };
      prefix[first_active] = 0;
      for (int j = first_active; j < m; ++j) prefix[j + 1] = prefix[j] + part(j, 0.0);
      for (int back = 1; back <= kRightEnds && m - back >= first_open; ++back) {
        for (int of_w = 0; of_w < (gamma > 0 ? 2 : 1); ++of_w) {
          const double q = p.op_tail(of_w ? 2 : 1, s, m - back);
          // in token units: Σ occupancy / c + gamma · Σ W executions
          int js = m;
          while (js > first_active &&
                 (q > p.op_tail(1, s, js - 1) || (gamma > 0 && q > p.op_tail(2, s, js - 1)))) {
            --js;
          }
          double energy = prefix[js];
          for (int j = js; j < m; ++j) energy += part(j, q);
          if (energy <= 0) continue;
          // Right deficit: with u = T - t, microbatch j is active at t only if u > tail of its
          // last op (its end is at most T - that tail); on u in [q, u_right) fewer than c.
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
          // A deficit counts only when its region lies in the window [t1, T - q], and both only
          // when the regions do not overlap; T >= known, t_left and f_right + u_right show it.
          const double base = t1 + energy + q;
          const double known_t = hd::max(hd::max(base, best), t_left);
          double v = base;
          const bool left_in = d_left > 0 && h_left + q <= known_t;
          const bool right_in = d_right > 0 && (t1 <= f_right || t1 + u_right <= known_t);
          if (left_in) v = hd::max(v, base + d_left / c);
          if (right_in) v = hd::max(v, base + d_right / c);
          if (left_in && right_in && (h_left <= f_right || h_left + u_right <= known_t)) {
            v = hd::max(v, base + (d_left + d_right) / c);
          }
          best = hd::max(best, v);
        }
      }
    }
  }
  return best;
}

}  // namespace optpipe
