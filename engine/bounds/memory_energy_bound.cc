#include "engine/bounds/memory_energy_bound.h"

#include <algorithm>
#include <limits>

#include "engine/bounds/memory_precedence.h"

namespace optpipe {

namespace {

bool known(double x) { return x == x; }

}  // namespace

double memory_energy_bound(const BoundProblem& p, const NodeTimes& node, const NodeTransfers* nt,
                           const std::vector<double>& head, const std::vector<double>& finish,
                           const std::vector<double>& offload_lb, double enough) {
  const double inf = std::numeric_limits<double>::infinity();
  const int m = p.m;
  double best = 0;
  for (int s = 0; s < p.S; ++s) {
    const int c = p.tokens[s];
    if (c <= 0 || c >= m) continue;  // no pressure (or nothing fits: infeasible anyway)
    const double F = p.dur[0 * p.S + s], B = p.dur[1 * p.S + s];
    const double off = p.offload_time[s], rel = p.reload_time[s];
    const bool full = p.offload_release[s] < inf;
    const double now = nt ? nt->now : node.device_free[p.device_of[s]];
    // Occupancy of a microbatch whose F has not started.
    auto occ_unstarted = [&](int j) {
      const double r = nt ? nt->level[s * m + j] : std::numeric_limits<double>::quiet_NaN();
      if (!known(r)) return F + B + (full ? std::min(p.latency[s], off + rel) : p.latency[s]);
      if (r >= 1.0) return F + B + off + rel;
      return F + B + std::max(p.latency[s], r * (off + rel));
    };
    // Occupancy after t1 (>= now) of a microbatch whose F started and whose B has not ended.
    auto occ_started = [&](int j, double t1) {
      const int sj = s * m + j;
      const double fb = finish[p.op(1, s, j)];
      const double r = nt ? nt->level[sj] : 0.0;  // without transfers: treat as not offloaded below
      if (!nt || !(r >= 1.0) || known(nt->reload_start[sj])) {
        if (!nt && p.offload_release[s] < inf) return std::max(0.0, std::min(B, fb - t1));  // unknown: only B itself
        return std::max(0.0, fb - t1);
      }
      const double e = offload_lb[sj];
      return std::max(0.0, e - t1) + std::max(0.0, std::min(rel + B, fb - std::max(t1, e)));
    };
    // The first microbatch whose F has not started, and the first whose B has not ended.
    int first_unstarted = 0;
    while (first_unstarted < m && known(node.end[p.op(0, s, first_unstarted)])) ++first_unstarted;
    int first_open = 0;
    while (first_open < m && known(node.end[p.op(1, s, first_open)]) && node.end[p.op(1, s, first_open)] <= now) {
      ++first_open;
    }
    if (first_open >= m) continue;
    // An optimistic value of every window below (no deduction, the latest start, the largest
    // right tail): when it cannot beat `enough`, skip the stage.
    {
      double t1_max = now, all = 0;
      for (int j = first_open; j < m; ++j) {
        if (j >= first_unstarted) {
          t1_max = std::max(t1_max, head[p.op(0, s, j)]);
          all += occ_unstarted(j) / c;
        } else {
          all += occ_started(j, now) / c;
        }
        all += p.token_w_weight[s] * (p.types == 3 ? p.dur[2 * p.S + s] : 0.0);
      }
      double q_max = 0;
      for (int back = 1; back <= 3 && m - back >= first_open; ++back) {
        q_max = std::max({q_max, p.op_tail(1, s, m - back), p.types == 3 ? p.op_tail(2, s, m - back) : 0.0});
      }
      if (t1_max + all + q_max <= std::max(best, enough)) continue;
    }
    // Right ends: T - q for q the tail of B or W of one of the last open microbatches (tails
    // fall with j, FIFO); an occupancy that ends by T - its tail may lie up to q - that tail
    // after T - q.
    constexpr int kRightEnds = 3;
    const double beta = p.token_w_weight[s], W = p.types == 3 ? p.dur[2 * p.S + s] : 0.0;
    constexpr int kLeftEnds = 8;  // the first ones: later windows lose the microbatches before them
    for (int k = first_unstarted; k <= m && k <= first_unstarted + kLeftEnds; ++k) {
      // Window from t1: the node's time, or the head of F(s, k). A microbatch not started whose
      // F's head is before t1 has at most t1 - head of its occupancy before t1.
      double t1 = now;
      if (k > first_unstarted) {
        if (k == m) break;
        t1 = std::max(now, head[p.op(0, s, k)]);
      }
      for (int back = 1; back <= kRightEnds && m - back >= first_open; ++back) {
        for (int of_w = 0; of_w < (beta > 0 ? 2 : 1); ++of_w) {
          const double q = p.op_tail(of_w ? 2 : 1, s, m - back);
          double energy = 0;  // in token units: Σ occupancy / c + beta · Σ W phases
          for (int j = first_open; j < m; ++j) {
            double e;
            if (j < first_unstarted) {
              if (known(node.end[p.op(1, s, j)]) && node.end[p.op(1, s, j)] <= t1) continue;
              e = occ_started(j, t1);
            } else {
              e = occ_unstarted(j) - std::max(0.0, t1 - std::max(now, head[p.op(0, s, j)]));
            }
            e -= std::max(0.0, q - p.op_tail(1, s, j));
            if (e > 0) energy += e / c;
            if (beta > 0) {
              // Its W phase: from B(s, j)'s end (>= its finish) to W(s, j)'s end, >= W, and
              // ending by T - tail(W(s, j)).
              const double fb = finish[p.op(1, s, j)];
              double ew = W - std::max(0.0, t1 - fb) - std::max(0.0, q - p.op_tail(2, s, j));
              if (ew > 0) energy += beta * ew;
            }
          }
          if (energy > 0) best = std::max(best, t1 + energy + q);
        }
      }
    }
  }
  return best;
}

}  // namespace optpipe
