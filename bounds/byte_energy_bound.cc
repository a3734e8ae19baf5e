#include "bounds/byte_energy_bound.h"

#include <algorithm>
#include <limits>

#include "model/simulator.h"

namespace optpipe {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// One segment of a stage's hull of (channel cost, byte-time saved) per microbatch: usable once
// per microbatch, m times in all.
struct Segment {
  double cost = 0, save = 0;
  int device = 0;
};

struct ByteGroup {
  std::vector<int> devices;
  std::vector<Segment> d2h, h2d;  // every stage's hull segments, by save per cost, best first
  double lead_d2h = kInf, lag_d2h = kInf, lead_h2d = kInf, lag_h2d = kInf;
};

struct ByteDevice {
  double base = 0;  // byte-time with nothing offloaded
  double cap = 0;   // bytes
  double h = kInf;  // the least head of a first forward of its stages
};

// The upper concave hull from (0, 0) of a stage's level points (cost, save), as segments.
void add_hull(std::vector<std::pair<double, double>> points, int device, std::vector<Segment>& out) {
  std::sort(points.begin(), points.end());
  double cost = 0, save = 0;
  while (true) {
    // The steepest rise from (cost, save) to a point beyond it.
    int best = -1;
    double slope = -kInf;
    for (int k = 0; k < static_cast<int>(points.size()); ++k) {
      const auto [c, v] = points[static_cast<std::size_t>(k)];
      if (!(v > save)) continue;
      const double s = c > cost ? (v - save) / (c - cost) : kInf;
      if (s > slope || (s == slope && c > points[static_cast<std::size_t>(best)].first)) slope = s, best = k;
    }
    if (best < 0) return;
    const auto [c, v] = points[static_cast<std::size_t>(best)];
    out.push_back({std::max(0.0, c - cost), v - save, device});
    cost = std::max(cost, c);
    save = v;
  }
}

bool by_efficiency(const Segment& a, const Segment& b) {
  // save per cost, larger first; free savings first of all
  return a.save * b.cost > b.save * a.cost;
}

// The least channel time with which every device of the group saves its need, each segment
// used at most m times (LP relaxation); infinity when some device cannot.
double least_channel_time(const std::vector<Segment>& segments, const std::vector<double>& need, int m) {
  std::vector<double> left = need;
  double time = 0;
  for (const Segment& g : segments) {
    double& l = left[static_cast<std::size_t>(g.device)];
    if (l <= 0 || !(g.save > 0)) continue;
    const double uses = std::min(static_cast<double>(m), l / g.save);
    time += uses * g.cost;
    l -= uses * g.save;
  }
  // What is left beyond rounding (relative to the need: byte-times are large numbers).
  for (std::size_t d = 0; d < left.size(); ++d) {
    if (left[d] > 1e-9 * std::max(1.0, need[d])) return kInf;
  }
  return time;
}

bool feasible(const ByteGroup& g, const std::vector<ByteDevice>& dev, int m, double T) {
  std::vector<double> need(dev.size(), 0.0);
  bool any = false;
  for (int d : g.devices) {
    const ByteDevice& v = dev[static_cast<std::size_t>(d)];
    const double n = v.base - v.cap * (T - v.h);
    // Relative slack: the byte-times are large numbers.
    if (n > 1e-12 * std::max(1.0, v.base)) need[static_cast<std::size_t>(d)] = n, any = true;
  }
  if (!any) return true;
  const double d2h = least_channel_time(g.d2h, need, m);
  if (!(d2h <= std::max(0.0, T - g.lead_d2h - g.lag_d2h) + 1e-12 * std::max(1.0, T))) return false;
  const double h2d = least_channel_time(g.h2d, need, m);
  return h2d <= std::max(0.0, T - g.lead_h2d - g.lag_h2d) + 1e-12 * std::max(1.0, T);
}

}  // namespace

double byte_energy_bound(const Instance& inst, const BoundProblem& p, const std::vector<double>& head) {
  const int S = p.S;
  std::vector<ByteDevice> dev(static_cast<std::size_t>(p.D));
  std::vector<ByteGroup> groups(static_cast<std::size_t>(std::max(p.G, 1)));
  double least_positive = kInf;
  for (double r : inst.offload_levels) {
    if (r > 0) least_positive = std::min(least_positive, r);
  }
  for (int d = 0; d < p.D; ++d) {
    const Device& device = inst.devices[static_cast<std::size_t>(d)];
    dev[static_cast<std::size_t>(d)].cap = device.memory_limit + kMemoryTolerance - device.static_memory;
    groups[static_cast<std::size_t>(p.group_of_device[static_cast<std::size_t>(d)])].devices.push_back(d);
  }
  for (int s = 0; s < S; ++s) {
    const int d = p.device_of[static_cast<std::size_t>(s)];
    ByteDevice& v = dev[static_cast<std::size_t>(d)];
    ByteGroup& g = groups[static_cast<std::size_t>(p.group_of_device[static_cast<std::size_t>(d)])];
    const double F = p.dur[0 * S + s], B = p.dur[1 * S + s], W = p.types == 3 ? p.dur[2 * S + s] : 0.0;
    const double a = p.activation[static_cast<std::size_t>(s)], lat = p.latency[static_cast<std::size_t>(s)];
    const double h = first_forward_head(p, head, s);
    v.h = std::min(v.h, h);
    v.base += p.m * (a * (F + lat + B) + p.hold_w[static_cast<std::size_t>(s)] * W);
    const Stage& st = inst.stages[static_cast<std::size_t>(s)];
    if (!st.offloadable() || !(a > 0) || !(least_positive < kInf)) continue;
    const double off = *st.offload, rel = *st.reload;
    std::vector<std::pair<double, double>> d2h, h2d;
    for (double r : inst.offload_levels) {
      if (!(r > 0)) continue;
      const double save = r * a * (lat - r * (off + rel));
      if (!(save > 0)) continue;
      d2h.emplace_back(r * off, save);
      h2d.emplace_back(r * rel, save);
    }
    if (d2h.empty()) continue;
    add_hull(d2h, d, g.d2h);
    add_hull(h2d, d, g.h2d);
    const double tail_b = p.tail[1 * S + s];
    g.lead_d2h = std::min(g.lead_d2h, h + F);
    g.lag_d2h = std::min(g.lag_d2h, least_positive * rel + B + tail_b);
    g.lead_h2d = std::min(g.lead_h2d, h + F + least_positive * off);
    g.lag_h2d = std::min(g.lag_h2d, B + tail_b);
  }
  double best = 0;
  for (ByteGroup& g : groups) {
    if (g.devices.empty()) continue;
    std::stable_sort(g.d2h.begin(), g.d2h.end(), by_efficiency);
    std::stable_sort(g.h2d.begin(), g.h2d.end(), by_efficiency);
    double lo = 0;
    for (int d : g.devices) lo = std::max(lo, dev[static_cast<std::size_t>(d)].h);
    if (feasible(g, dev, p.m, lo)) continue;  // nothing beyond the heads
    double hi = std::max(1.0, 2 * lo);
    for (int k = 0; k < 200 && !feasible(g, dev, p.m, hi); ++k) hi *= 2;
    for (int it = 0; it < 200 && hi - lo > 1e-9 * std::max(1.0, hi); ++it) {
      const double mid = 0.5 * (lo + hi);
      (feasible(g, dev, p.m, mid) ? hi : lo) = mid;
    }
    best = std::max(best, lo);  // the largest T shown infeasible
  }
  return best;
}

}  // namespace optpipe
