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

// The earliest x >= lo where [x, x + len) avoids every busy [y, y + ly) modulo c; NaN when the
// shifts do not settle: the free part of the cycle can be in pieces all shorter than len, even
// when len and the busy lengths sum to at most c (then this cycle has no template).
double earliest_free(double lo, double len, const std::vector<std::pair<double, double>>& busy, double c) {
  double x = lo;
  for (int round = 0; round < 4 * static_cast<int>(busy.size()) + 4; ++round) {
    bool moved = false;
    for (const auto& [y, ly] : busy) {
      if (!overlaps_modulo(x, len, y, ly, c)) continue;
      const double u = residue(x - y, c);
      x += u < ly - kEps ? ly - u : (c - u) + ly;  // past this occurrence of [y, y + ly)
      moved = true;
    }
    if (!moved) return x;
  }
  return std::numeric_limits<double>::quiet_NaN();
}

// One stage's B and W offsets, B no earlier than lo (see the header). w_after_b: the W only
// right after its B (periodic_offsets).
void place_backward(double lo, double f, double fd, double bd, double wd, double c, bool w_after_b,
                    StageOffsets& o) {
  double x = earliest_beside_forward(lo, bd, f, fd, c);
  const double ub = residue(x - f, c);
  if (wd <= kEps || c - ub - bd >= wd - kEps) {
    o.b = x;
    o.w = x + bd;
  } else if (!w_after_b && ub - fd >= wd - kEps) {
    o.b = x;
    o.w = x + (c - ub) + fd;  // the gap between the next forward and this B's residue
  } else {
    o.b = x + (c - ub) + fd;  // right after the next forward: the rest of the cycle is one gap
    o.w = o.b + bd;
  }
}

// Device d's list: its stages' ops by planned start (B before W before F at equal times, then
// by microbatch, then by stage), each R right after the last compute op that ends by its planned
// start (and after its F). `plan` is the device's memory plan; its stage i is stages[i].
std::vector<Action> device_list(const Instance& inst, const std::vector<int>& stages, const std::vector<StageOffsets>& o,
                                double c, const PeriodicMemoryPlan& plan) {
  const int m = inst.microbatches, k = static_cast<int>(stages.size());
  std::vector<std::tuple<double, int, int, int, Action>> ops;  // start, rank, mb, local stage, action
  for (int i = 0; i < k; ++i) {
    const int s = stages[static_cast<std::size_t>(i)];
    const StageOffsets& so = o[static_cast<std::size_t>(s)];
    for (int j = 0; j < m; ++j) {
      ops.emplace_back(so.f + c * j, 2, j, i, make_f(s, j, plan.offloaded(i, j) ? plan.level() : 0.0));
      ops.emplace_back(so.b + c * j, 0, j, i, make_b(s, j));
      if (inst.split_backward) ops.emplace_back(so.w + c * j, 1, j, i, make_w(s, j));
    }
  }
  std::sort(ops.begin(), ops.end(), [](const auto& x, const auto& y) {
    return std::tie(std::get<0>(x), std::get<1>(x), std::get<2>(x), std::get<3>(x)) <
           std::tie(std::get<0>(y), std::get<1>(y), std::get<2>(y), std::get<3>(y));
  });
  std::vector<Action> list;
  std::vector<char> listed_f(static_cast<std::size_t>(k) * m, 0);
  std::vector<int> next_r(static_cast<std::size_t>(k), 0);  // per stage: the next microbatch whose R may still be due
  for (const auto& [start, rank, j, i, a] : ops) {
    const double end = start + inst.duration(a.type, a.stage);
    // Before this op, every pending R (per stage, in microbatch order) that is due before it
    // ends, or whose B this is.
    for (int q = 0; q < k; ++q) {
      int& r = next_r[static_cast<std::size_t>(q)];
      for (; r < m; ++r) {
        if (!plan.offloaded(q, r)) continue;
        if (!listed_f[static_cast<std::size_t>(q) * m + r]) break;
        const bool due = plan.reload_start(q, r) < end - kEps || (a.type == OpType::B && q == i && a.mb >= r);
        if (!due) break;
        list.push_back(make_r(stages[static_cast<std::size_t>(q)], r));
      }
    }
    list.push_back(a);
    if (a.type == OpType::F) listed_f[static_cast<std::size_t>(i) * m + j] = 1;
  }
  return list;
}

}  // namespace

bool several_stages_on_a_device(const Instance& inst) {
  for (const std::vector<int>& stages : inst.stages_by_device()) {
    if (stages.size() > 1) return true;
  }
  return false;
}

bool overlaps_modulo(double x, double lx, double y, double ly, double c) {
  const double u = residue(x - y, c);  // x relative to y
  return u < ly - kEps || u + lx > c + kEps;
}

std::vector<StageOffsets> periodic_offsets(const Instance& inst, double c, bool chains_only, bool stagger,
                                           bool w_after_b) {
  const int S = inst.num_stages();
  if (!(c > 0)) return {};
  for (int d = 0; d < inst.num_devices(); ++d) {
    if (inst.work_per_microbatch(d) > c + kEps) return {};
  }
  // Residues taken on each device so far (devices with several stages: their ops must not collide).
  std::vector<std::vector<std::pair<double, double>>> busy(static_cast<std::size_t>(inst.num_devices()));
  const std::vector<std::vector<int>> by_device = inst.stages_by_device();
  auto shared_device = [&](int s) { return by_device[static_cast<std::size_t>(inst.stages[s].device)].size() > 1; };
  std::vector<StageOffsets> o(static_cast<std::size_t>(S));
  const double level = inst.offload_levels.empty() ? 1.0 : inst.offload_levels.back();
  // Whether stages s and s + 1 take turns on their PCIe group's channels (stagger).
  auto turns = [&](int s) {
    const Stage& a = inst.stages[s];
    const Stage& b = inst.stages[s + 1];
    return stagger && a.offloadable() && b.offloadable() && a.device != b.device &&
           inst.devices[a.device].pcie_group == inst.devices[b.device].pcie_group;
  };
  for (int s = 0; s < S; ++s) {
    if (s > 0) {
      const Stage& prev = inst.stages[s - 1];
      o[s].f = o[s - 1].f + prev.forward + inst.comm_after(s - 1);
      if (turns(s - 1)) {
        o[s].f = std::max(o[s].f, o[s - 1].f + prev.forward + level * *prev.offload - inst.stages[s].forward);
      }
    }
    if (shared_device(s)) {  // past the residues of the device's earlier stages' forwards
      auto& taken = busy[inst.stages[s].device];
      o[s].f = earliest_free(o[s].f, inst.stages[s].forward, taken, c);
      if (!(o[s].f == o[s].f)) return {};
      taken.emplace_back(o[s].f, inst.stages[s].forward);
    }
  }
  for (int s = S - 1; s >= 0; --s) {
    const Stage& st = inst.stages[s];
    const double bd = inst.duration(OpType::B, s), wd = inst.split_backward ? st.weight : 0.0;
    double lo = o[s].f + st.forward;
    if (s + 1 < S) lo = std::max(lo, o[s + 1].b + inst.duration(OpType::B, s + 1) + inst.comm_after(s));
    if (s + 1 < S && turns(s)) lo = std::max(lo, o[s + 1].b + level * *st.reload);
    if (chains_only) {
      o[s].b = lo;
      o[s].w = lo + bd;
    } else if (!shared_device(s)) {
      place_backward(lo, o[s].f, st.forward, bd, wd, c, w_after_b, o[s]);
    } else if (w_after_b) {  // B and W together at the first residue free for both
      auto& taken = busy[st.device];
      o[s].b = earliest_free(lo, bd + wd, taken, c);
      if (!(o[s].b == o[s].b)) return {};
      taken.emplace_back(o[s].b, bd + wd);
      o[s].w = o[s].b + bd;
    } else {  // B, then W, each at the first residue free of the device's ops placed so far
      auto& taken = busy[st.device];
      o[s].b = earliest_free(lo, bd, taken, c);
      if (!(o[s].b == o[s].b)) return {};
      taken.emplace_back(o[s].b, bd);
      o[s].w = o[s].b + bd;
      if (wd > 0) {
        o[s].w = earliest_free(o[s].b + bd, wd, taken, c);
        if (!(o[s].w == o[s].w)) return {};
        taken.emplace_back(o[s].w, wd);
      }
    }
  }
  return o;
}

std::optional<PeriodicPlan> periodic_plan(const Instance& inst, const PeriodicPlanOptions& opt) {
  const std::vector<StageOffsets> o = periodic_offsets(inst, opt.cycle, opt.chains_only, opt.stagger, opt.w_after_b);
  if (o.empty()) return std::nullopt;
  const int m = inst.microbatches, S = inst.num_stages();
  PeriodicPlan out;
  out.offsets = o;
  out.offload_end.assign(static_cast<std::size_t>(S) * m, std::numeric_limits<double>::quiet_NaN());
  out.reload_start = out.offload_end;
  out.schedule.instance = inst.name;
  out.schedule.devices.resize(static_cast<std::size_t>(inst.num_devices()));
  // The channels of each PCIe group, shared by its devices' stages (planned device by device, in
  // the order of their first stages).
  std::map<int, std::pair<ChannelBook, ChannelBook>> channels;  // group -> (D2H, H2D)
  std::vector<std::vector<int>> by_device = inst.stages_by_device();
  std::erase_if(by_device, [](const std::vector<int>& stages) { return stages.empty(); });
  std::sort(by_device.begin(), by_device.end(), [](const auto& a, const auto& b) { return a.front() < b.front(); });
  for (const std::vector<int>& stages : by_device) {
    const int d = inst.stages[stages.front()].device;
    auto& [d2h, h2d] = channels[inst.devices[d].pcie_group];
    PeriodicMemoryPlan plan(inst, stages, o, opt, d2h, h2d);
    if (!plan.run()) return std::nullopt;
    for (std::size_t i = 0; i < stages.size(); ++i) {
      const std::size_t s = static_cast<std::size_t>(stages[i]);
      for (int j = 0; j < m; ++j) {
        if (!plan.offloaded(static_cast<int>(i), j)) continue;
        out.offload_end[s * m + j] = plan.offload_end(static_cast<int>(i), j);
        out.reload_start[s * m + j] = plan.reload_start(static_cast<int>(i), j);
      }
    }
    out.schedule.devices[static_cast<std::size_t>(d)] = device_list(inst, stages, o, opt.cycle, plan);
  }
  return out;
}

std::optional<Schedule> periodic_schedule(const Instance& inst, const PeriodicPlanOptions& opt) {
  std::optional<PeriodicPlan> p = periodic_plan(inst, opt);
  if (!p) return std::nullopt;
  return std::move(p->schedule);
}

}  // namespace optpipe
