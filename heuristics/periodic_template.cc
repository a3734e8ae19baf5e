#include "heuristics/periodic_template.h"

#include "heuristics/periodic_memory_plan.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

namespace optpipe {

namespace {

constexpr double kEps = 1e-9;

double residue(double x, double c) {
  double u = std::fmod(x, c);
  if (u < 0) u += c;
  return u >= c - kEps ? 0.0 : u;
}

// The earliest x >= lo where [x, x + len) avoids the forward's [f, f + fd) modulo c.
double earliest_beside_forward(double lo, double len, double f, double fd, double c) {
  const double u = residue(lo - f, c);
  if (u < fd - kEps) return lo + (fd - u);
  if (u + len > c + kEps) return lo + (c - u) + fd;
  return lo;
}

// One stage's B and W offsets, B no earlier than lo (see the header).
void place_backward(double lo, double f, double fd, double bd, double wd, double c, StageOffsets& o) {
  double x = earliest_beside_forward(lo, bd, f, fd, c);
  const double ub = residue(x - f, c);
  if (wd <= kEps || c - ub - bd >= wd - kEps) {
    o.b = x;
    o.w = x + bd;
  } else if (ub - fd >= wd - kEps) {
    o.b = x;
    o.w = x + (c - ub) + fd;  // the gap between the next forward and this B's residue
  } else {
    o.b = x + (c - ub) + fd;  // right after the next forward: the rest of the cycle is one gap
    o.w = o.b + bd;
  }
}

// Device list of stage s: its ops by planned start (B before W before F at equal times), each R
// right after the last compute op that ends by its planned start (and after its F).
std::vector<Action> stage_list(const Instance& inst, int s, const StageOffsets& o, double c, const PeriodicMemoryPlan& plan) {
  const int m = inst.microbatches;
  std::vector<std::tuple<double, int, int, Action>> ops;  // start, rank, mb, action
  for (int j = 0; j < m; ++j) {
    ops.emplace_back(o.f + c * j, 2, j, make_f(s, j, plan.offloaded(j) ? plan.level() : 0.0));
    ops.emplace_back(o.b + c * j, 0, j, make_b(s, j));
    if (inst.split_backward) ops.emplace_back(o.w + c * j, 1, j, make_w(s, j));
  }
  std::sort(ops.begin(), ops.end(), [](const auto& x, const auto& y) {
    return std::tie(std::get<0>(x), std::get<1>(x), std::get<2>(x)) < std::tie(std::get<0>(y), std::get<1>(y), std::get<2>(y));
  });
  std::vector<Action> list;
  std::vector<char> listed_f(static_cast<std::size_t>(m), 0);
  int next_r = 0;  // the next microbatch whose R may still be due
  for (const auto& [start, rank, j, a] : ops) {
    const double end = start + inst.duration(a.type, s);
    // Before this op, every pending R (in microbatch order) that is due before it ends, or whose
    // B this is.
    for (; next_r < m; ++next_r) {
      if (!plan.offloaded(next_r)) continue;
      if (!listed_f[next_r]) break;
      const bool due = plan.reload_start(next_r) < end - kEps || (a.type == OpType::B && a.mb >= next_r);
      if (!due) break;
      list.push_back(make_r(s, next_r));
    }
    list.push_back(a);
    if (a.type == OpType::F) listed_f[j] = 1;
  }
  return list;
}

}  // namespace

bool overlaps_modulo(double x, double lx, double y, double ly, double c) {
  const double u = residue(x - y, c);  // x relative to y
  return u < ly - kEps || u + lx > c + kEps;
}

std::vector<StageOffsets> periodic_offsets(const Instance& inst, double c, bool chains_only, bool stagger) {
  const int S = inst.num_stages();
  if (inst.placement() != Placement::kOnePerDevice || !(c > 0)) return {};
  for (int s = 0; s < S; ++s) {
    const double work = inst.stages[s].forward + inst.duration(OpType::B, s) + (inst.split_backward ? inst.stages[s].weight : 0);
    if (work > c + kEps) return {};
  }
  std::vector<StageOffsets> o(static_cast<std::size_t>(S));
  const double level = inst.offload_levels.empty() ? 1.0 : inst.offload_levels.back();
  // Whether stages s and s + 1 take turns on their PCIe group's channels (stagger).
  auto turns = [&](int s) {
    const Stage& a = inst.stages[s];
    const Stage& b = inst.stages[s + 1];
    return stagger && a.offloadable() && b.offloadable() && a.device != b.device &&
           inst.devices[a.device].pcie_group == inst.devices[b.device].pcie_group;
  };
  for (int s = 1; s < S; ++s) {
    const Stage& prev = inst.stages[s - 1];
    o[s].f = o[s - 1].f + prev.forward + inst.comm_after(s - 1);
    if (turns(s - 1)) {
      o[s].f = std::max(o[s].f, o[s - 1].f + prev.forward + level * *prev.offload - inst.stages[s].forward);
    }
  }
  for (int s = S - 1; s >= 0; --s) {
    const Stage& st = inst.stages[s];
    double lo = o[s].f + st.forward;
    if (s + 1 < S) lo = std::max(lo, o[s + 1].b + inst.duration(OpType::B, s + 1) + inst.comm_after(s));
    if (s + 1 < S && turns(s)) lo = std::max(lo, o[s + 1].b + level * *st.reload);
    if (chains_only) {
      o[s].b = lo;
      o[s].w = lo + inst.duration(OpType::B, s);
    } else {
      place_backward(lo, o[s].f, st.forward, inst.duration(OpType::B, s), inst.split_backward ? st.weight : 0.0, c, o[s]);
    }
  }
  return o;
}

std::optional<PeriodicPlan> periodic_plan(const Instance& inst, const PeriodicPlanOptions& opt) {
  const std::vector<StageOffsets> o = periodic_offsets(inst, opt.cycle, opt.chains_only, opt.stagger);
  if (o.empty()) return std::nullopt;
  const int m = inst.microbatches, S = inst.num_stages();
  PeriodicPlan out;
  out.offsets = o;
  out.offload_end.assign(static_cast<std::size_t>(S) * m, std::numeric_limits<double>::quiet_NaN());
  out.reload_start = out.offload_end;
  out.schedule.instance = inst.name;
  out.schedule.devices.resize(static_cast<std::size_t>(inst.num_devices()));
  // The channels of each PCIe group, shared by its devices' stages (planned in stage order).
  std::map<int, std::pair<ChannelBook, ChannelBook>> channels;  // group -> (D2H, H2D)
  for (int s = 0; s < S; ++s) {
    auto& [d2h, h2d] = channels[inst.devices[inst.stages[s].device].pcie_group];
    PeriodicMemoryPlan plan(inst, s, o[s], opt, d2h, h2d);
    if (!plan.run()) return std::nullopt;
    for (int j = 0; j < m; ++j) {
      if (!plan.offloaded(j)) continue;
      out.offload_end[static_cast<std::size_t>(s) * m + j] = plan.offload_end(j);
      out.reload_start[static_cast<std::size_t>(s) * m + j] = plan.reload_start(j);
    }
    out.schedule.devices[static_cast<std::size_t>(inst.stages[s].device)] = stage_list(inst, s, o[s], opt.cycle, plan);
  }
  return out;
}

std::optional<Schedule> periodic_schedule(const Instance& inst, const PeriodicPlanOptions& opt) {
  std::optional<PeriodicPlan> p = periodic_plan(inst, opt);
  if (!p) return std::nullopt;
  return std::move(p->schedule);
}

}  // namespace optpipe
