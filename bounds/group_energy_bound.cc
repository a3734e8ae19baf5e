#include "bounds/group_energy_bound.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

namespace optpipe {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// The most count vectors a group's check enumerates (two stages of 128 microbatches: 16641).
constexpr std::size_t kMaxCountVectors = 1 << 15;

// One stage's part of the bound (see the header).
struct EnergyStage {
  int s = 0;
  double h = 0;            // head of F(s, 0)
  double occ0 = 0, occ1 = 0, w_part = 0;
  int c = 0, m = 0;
  bool offloads = false;   // a full offload frees its token for less than occ0
  double off = 0, rel = 0;
  double first_b = 0;      // beta: no B(s, j) starts earlier (h + F + lat)
  double before_end = 0;   // every F(s, j) ends by T minus this (lat + B + B's static tail)

  // Least makespan the energy allows with x full offloads.
  double t_energy(int x) const { return h + ((m - x) * occ0 + x * occ1 + w_part) / c; }
  // Least count of full offloads that makespan t allows; -1: none does.
  int least_offloads(double t) const {
    if (t_energy(0) <= t) return 0;
    if (!offloads || t_energy(m) > t * (1 + 1e-12)) return -1;
    const double x = ((m * occ0 + w_part) - c * (t - h)) / (occ0 - occ1);
    int k = std::clamp(static_cast<int>(std::ceil(x - 1e-9)), 0, m);
    while (k > 0 && t_energy(k - 1) <= t) --k;
    while (k < m && t_energy(k) > t) ++k;
    return k;
  }
};

// A group's stages under memory pressure and its channels' margins.
struct EnergyGroup {
  std::vector<EnergyStage> stages;
  bool misplaced = true;   // charge misplaced transfers (see the header)
  bool reload_lag = true;  // charge reloads too soon after their offloads (see the header)
  double lead_d2h = kInf, lag_d2h = kInf, lead_h2d = kInf, lag_h2d = kInf;

  // The least makespan of the channels for these counts (0 when nothing offloads).
  double t_channels(const std::vector<int>& x) const {
    double d2h = 0, h2d = 0;
    for (std::size_t i = 0; i < stages.size(); ++i) {
      d2h += x[i] * stages[i].off;
      h2d += x[i] * stages[i].rel;
    }
    if (d2h <= 0 && h2d <= 0) return 0;
    return std::max(lead_d2h + d2h + lag_d2h, lead_h2d + h2d + lag_h2d);
  }
  // The memory-time that transfers outside their useful windows cost the group's stages
  // together (see the header): reloads that must end before the earliest B of a reloading
  // stage, and offloads that must start after the latest F of an offloading stage.
  double misplaced_energy(double t, const std::vector<int>& x) const {
    double work_h = 0, work_d = 0, beta = kInf, delta = -kInf;
    double r_max = 0, r_min = kInf, o_max = 0, o_min = kInf;
    for (std::size_t i = 0; i < stages.size(); ++i) {
      if (x[i] <= 0) continue;
      const EnergyStage& e = stages[i];
      work_h += x[i] * e.rel;
      work_d += x[i] * e.off;
      beta = std::min(beta, e.first_b);
      delta = std::max(delta, t - e.before_end);
      r_max = std::max(r_max, e.rel), r_min = std::min(r_min, e.rel);
      o_max = std::max(o_max, e.off), o_min = std::min(o_min, e.off);
    }
    if (work_h <= 0) return 0;
    double extra = 0;
    auto staircase = [](double work, double longest, double shortest) {
      if (!(work > 1e-9 * longest) || !(longest > 0)) return 0.0;
      const double n = std::ceil(work / longest - 1e-9);
      return shortest * n * (n - 1) / 2;
    };
    extra += staircase(work_h - (t - lag_h2d - beta + r_max), r_max, r_min);
    extra += staircase(work_d - (delta + o_max - lead_d2h), o_max, o_min);
    return extra;
  }
  // The memory-time that reloads too soon after their offloads cost the group's stages together
  // (see the header): the i-th offload of the group ends no earlier than lead_d2h + i·o, its
  // microbatch's B starts no earlier than its F's end + lat, so a reload that starts less than
  // lambda = lat - offload - reload after that offload ends holds its token the difference longer
  // (or the offload waited that long); and the reloads must all end by t - lag_h2d, one at a time.
  double reload_lag_energy(double t, const std::vector<int>& x) const {
    int n = 0;
    double lambda = kInf, o = kInf, r = kInf, lambda_sum = 0;
    for (std::size_t i = 0; i < stages.size(); ++i) {
      if (x[i] <= 0) continue;
      const EnergyStage& e = stages[i];
      n += x[i];
      lambda = std::min(lambda, e.occ0 - e.occ1);
      lambda_sum += x[i] * (e.occ0 - e.occ1);
      o = std::min(o, e.off), r = std::min(r, e.rel);
    }
    if (n == 0) return 0;
    // The i-th (1..n) reload in release order must start by t - lag_h2d - (n - i + 1)·r; without
    // cost it starts no earlier than lead_d2h + i·o + lambda. Σ_i max(0, a + i·d):
    const double a = lead_d2h + lambda - (t - lag_h2d) + (n + 1) * r, d = o - r;
    double cost = 0;
    for (int i = 1; i <= n; ++i) cost += std::max(0.0, a + i * d);
    // Or, each job with its own stage's lambda, unclipped: whatever the order, the positions sum
    // to n(n+1)/2 on both channels, so the shortfalls sum to at least
    //     n·(lead_d2h - (t - lag_h2d)) + (o + r)·n(n+1)/2 + Σ_s x_s·lambda_s.
    const double all = n * (lead_d2h - (t - lag_h2d)) + (o + r) * n * (n + 1.0) / 2 + lambda_sum;
    return std::max(cost, all);
  }
  // Whether counts x (each at least the stage's least_offloads(t)) fit the channels and the
  // group's memory-time with the misplaced transfers' cost, and with the reloads' lag cost (each
  // a separate constraint: both may charge the same waiting).
  bool fits(double t, const std::vector<int>& x) const {
    if (t_channels(x) > t) return false;
    const double misplaced_need = misplaced ? misplaced_energy(t, x) : 0.0;
    const double lag_need = reload_lag ? reload_lag_energy(t, x) : 0.0;
    if (misplaced_need <= 0 && lag_need <= 0) return true;
    double need = 0, have = 0;
    for (std::size_t i = 0; i < stages.size(); ++i) {
      const EnergyStage& e = stages[i];
      need += (e.m - x[i]) * e.occ0 + x[i] * e.occ1 + e.w_part;
      have += e.c * (t - e.h);
    }
    return need + std::max(misplaced_need, lag_need) <= have * (1 + 1e-12);
  }
  bool feasible(double t, std::vector<int>& x) const {
    x.resize(stages.size());
    for (std::size_t i = 0; i < stages.size(); ++i) {
      x[i] = stages[i].least_offloads(t);
      if (x[i] < 0) return false;
    }
    if (t_channels(x) > t) return false;
    if (!misplaced && !reload_lag) return true;
    // More offloads than the least free memory-time that may pay for misplaced transfers: try
    // every count vector from x up (each stage up to m), or give the refinement up when there
    // are too many.
    std::size_t combos = 1;
    for (std::size_t i = 0; i < stages.size(); ++i) {
      combos *= static_cast<std::size_t>(stages[i].offloads ? stages[i].m - x[i] + 1 : 1);
      if (combos > kMaxCountVectors) return true;
    }
    std::vector<int> y = x;
    for (;;) {
      if (fits(t, y)) return true;
      std::size_t i = 0;
      for (; i < y.size(); ++i) {
        if (stages[i].offloads && y[i] < stages[i].m) {
          ++y[i];
          break;
        }
        y[i] = x[i];
      }
      if (i == y.size()) return false;
    }
  }
};

std::vector<EnergyGroup> energy_groups(const BoundProblem& p, const std::vector<double>& head, bool misplaced,
                                       bool reload_lag) {
  std::vector<EnergyGroup> groups(static_cast<std::size_t>(std::max(p.G, 0)));
  for (EnergyGroup& g : groups) g.misplaced = misplaced, g.reload_lag = reload_lag;
  const int S = p.S;
  for (int s = 0; s < S; ++s) {
    if (p.tokens[s] <= 0 || p.tokens[s] >= p.m) continue;  // no memory pressure
    EnergyStage e;
    e.s = s;
    e.m = p.m;
    e.c = p.tokens[s];
    e.h = first_forward_head(p, head, s);
    const double F = p.dur[0 * S + s], B = p.dur[1 * S + s], W = p.types == 3 ? p.dur[2 * S + s] : 0.0;
    e.occ0 = F + p.latency[s] + B;
    e.occ1 = F + p.offload_time[s] + p.reload_time[s] + B;
    e.w_part = p.token_w_weight[s] * p.m * W;
    e.offloads = p.offload_release[s] < kInf && e.occ1 < e.occ0;
    e.off = p.offload_time[s];
    e.rel = p.reload_time[s];
    e.first_b = e.h + F + p.latency[s];
    e.before_end = p.latency[s] + B + p.tail[1 * S + s];
    EnergyGroup& g = groups[static_cast<std::size_t>(p.group_of_device[p.device_of[s]])];
    if (e.offloads) {
      const double tail_b = p.tail[1 * S + s];
      g.lead_d2h = std::min(g.lead_d2h, e.h + F);
      g.lag_d2h = std::min(g.lag_d2h, e.rel + B + tail_b);
      g.lead_h2d = std::min(g.lead_h2d, e.h + F + e.off);
      g.lag_h2d = std::min(g.lag_h2d, B + tail_b);
    }
    g.stages.push_back(e);
  }
  return groups;
}

// The least T feasible for group g, by bisection.
double group_value(const EnergyGroup& g) {
  if (g.stages.empty()) return 0;
  std::vector<int> x;
  double lo = 0, hi = 0;
  for (const EnergyStage& e : g.stages) {
    lo = std::max(lo, e.t_energy(e.offloads ? e.m : 0));
    hi = std::max(hi, e.t_energy(0));
  }
  if (g.feasible(lo, x)) return lo;
  // hi: no stage needs an offload there, so no channel constraint: feasible.
  for (int it = 0; it < 200 && hi - lo > 1e-9 * std::max(1.0, hi); ++it) {
    const double mid = 0.5 * (lo + hi);
    (g.feasible(mid, x) ? hi : lo) = mid;
  }
  return lo;  // the largest T shown infeasible: a lower bound (the feasible side is hi)
}

}  // namespace

double group_energy_bound(const BoundProblem& p, const std::vector<double>& head, bool misplaced, bool reload_lag) {
  double best = 0;
  for (const EnergyGroup& g : energy_groups(p, head, misplaced, reload_lag)) best = std::max(best, group_value(g));
  return best;
}

double group_energy_bound_by_enumeration(const BoundProblem& p, const std::vector<double>& head) {
  double best = 0;
  for (const EnergyGroup& g : energy_groups(p, head, true, true)) {
    if (g.stages.empty()) continue;
    std::vector<int> x(g.stages.size(), 0);
    double least = kInf;
    std::function<void(std::size_t)> enumerate = [&](std::size_t i) {
      if (i == x.size()) {
        double t = g.t_channels(x);
        for (std::size_t k = 0; k < x.size(); ++k) t = std::max(t, g.stages[k].t_energy(x[k]));
        // The misplaced transfers' memory-time: the least t from there on where x fits, by
        // doubling and bisection (it only gets easier as t grows).
        if (t < kInf && !g.fits(t, x)) {
          double lo = t, step = std::max(1.0, t);
          while (!g.fits(lo + step, x)) lo += step, step *= 2;
          double hi = lo + step;
          for (int it = 0; it < 200 && hi - lo > 1e-9 * std::max(1.0, hi); ++it) {
            const double mid = 0.5 * (lo + hi);
            (g.fits(mid, x) ? hi : lo) = mid;
          }
          t = lo;
        }
        least = std::min(least, t);
        return;
      }
      const int top = g.stages[i].offloads ? g.stages[i].m : 0;
      for (x[i] = 0; x[i] <= top; ++x[i]) enumerate(i + 1);
      x[i] = 0;
    };
    enumerate(0);
    best = std::max(best, least);
  }
  return best;
}

}  // namespace optpipe
