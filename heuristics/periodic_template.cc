#include "heuristics/periodic_template.h"

#include <algorithm>
#include <cmath>
#include <limits>
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

struct Times {
  double fs, fe, bs, be, we;
};

// The planned memory plan of one stage (see the header).
class MemoryPlan {
 public:
  MemoryPlan(const Instance& inst, int s, const StageOffsets& o, const PeriodicPlanOptions& opt)
      : m_(inst.microbatches), act_(inst.stages[s].activation), keep_w_(inst.freed_by_w(s)),
        cap_(inst.devices[inst.stages[s].device].memory_limit - inst.devices[inst.stages[s].device].static_memory),
        r_(inst.offload_levels.back()), can_(inst.stages[s].offloadable() && r_ > 0), off_(m_, 0) {
    const Stage& st = inst.stages[s];
    times_.resize(m_);
    oe_.resize(m_);
    rs_.resize(m_);
    for (int j = 0; j < m_; ++j) {
      Times& t = times_[j];
      t.fs = o.f + opt.cycle * j;
      t.fe = t.fs + st.forward;
      t.bs = o.b + opt.cycle * j;
      t.be = t.bs + inst.duration(OpType::B, s);
      t.we = inst.split_backward ? o.w + opt.cycle * j + st.weight : t.be;
      if (can_) {
        oe_[j] = t.fe + r_ * *st.offload + opt.offload_margin;
        rs_[j] = t.bs - r_ * *st.reload - opt.reload_margin;
      }
    }
  }

  // Chooses the offloads; false when the plan cannot fit.
  bool run() {
    for (int jj = 0; jj < m_; ++jj) {
      std::vector<double> points{times_[jj].fs};
      for (int k = first_; k < jj; ++k) {
        if (off_[k] && rs_[k] >= times_[jj].fs && rs_[k] < times_[jj].we) points.push_back(rs_[k]);
      }
      for (std::size_t p = 0; p < points.size(); ++p) {
        while (memory(points[p], jj) > cap_) {
          const int k = victim(points[p], jj);
          if (k < 0) return false;
          off_[k] = 1;
          points.push_back(rs_[k]);
        }
      }
      while (first_ < jj && times_[first_].we <= times_[jj + 1 < m_ ? jj + 1 : jj].fs) ++first_;
    }
    return true;
  }

  bool offloaded(int j) const { return off_[j] != 0; }
  double reload_start(int j) const { return rs_[j]; }
  double level() const { return r_; }

 private:
  double memory_of(int k, double x) const {
    const Times& t = times_[k];
    if (x < t.fs || x >= t.we) return 0;
    if (x >= t.be) return keep_w_;
    if (off_[k] && x >= oe_[k] && x < rs_[k]) return act_ * (1 - r_);
    return act_;
  }
  double memory(double x, int last) const {
    double sum = 0;
    for (int k = first_; k <= last; ++k) sum += memory_of(k, x);
    return sum;
  }
  // The microbatch to offload for instant x: out at x if offloaded, latest backward.
  int victim(double x, int last) const {
    if (!can_) return -1;
    int best = -1;
    for (int k = first_; k <= last; ++k) {
      if (off_[k] || !(oe_[k] <= x && x < rs_[k] && oe_[k] < rs_[k])) continue;
      if (best < 0 || times_[k].bs > times_[best].bs) best = k;
    }
    return best;
  }

  int m_;
  double act_, keep_w_, cap_, r_;
  bool can_;
  std::vector<char> off_;
  std::vector<Times> times_;
  std::vector<double> oe_, rs_;
  int first_ = 0;
};

// Device list of stage s: its ops by planned start (B before W before F at equal times), each R
// right after the last compute op that ends by its planned start (and after its F).
std::vector<Action> stage_list(const Instance& inst, int s, const StageOffsets& o, double c, const MemoryPlan& plan) {
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

std::vector<StageOffsets> periodic_offsets(const Instance& inst, double c) {
  const int S = inst.num_stages();
  if (inst.placement() != Placement::kOnePerDevice || !(c > 0)) return {};
  for (int s = 0; s < S; ++s) {
    const double work = inst.stages[s].forward + inst.duration(OpType::B, s) + (inst.split_backward ? inst.stages[s].weight : 0);
    if (work > c + kEps) return {};
  }
  std::vector<StageOffsets> o(static_cast<std::size_t>(S));
  for (int s = 1; s < S; ++s) o[s].f = o[s - 1].f + inst.stages[s - 1].forward + inst.comm_after(s - 1);
  for (int s = S - 1; s >= 0; --s) {
    const Stage& st = inst.stages[s];
    double lo = o[s].f + st.forward;
    if (s + 1 < S) lo = std::max(lo, o[s + 1].b + inst.duration(OpType::B, s + 1) + inst.comm_after(s));
    place_backward(lo, o[s].f, st.forward, inst.duration(OpType::B, s), inst.split_backward ? st.weight : 0.0, c, o[s]);
  }
  return o;
}

std::optional<Schedule> periodic_schedule(const Instance& inst, const PeriodicPlanOptions& opt) {
  const std::vector<StageOffsets> o = periodic_offsets(inst, opt.cycle);
  if (o.empty()) return std::nullopt;
  Schedule sch;
  sch.instance = inst.name;
  sch.devices.resize(static_cast<std::size_t>(inst.num_devices()));
  for (int s = 0; s < inst.num_stages(); ++s) {
    MemoryPlan plan(inst, s, o[s], opt);
    if (!plan.run()) return std::nullopt;
    sch.devices[static_cast<std::size_t>(inst.stages[s].device)] = stage_list(inst, s, o[s], opt.cycle, plan);
  }
  return sch;
}

}  // namespace optpipe
