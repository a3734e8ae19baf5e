#include "bounds/bound_problem.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "bounds/memory_precedence.h"
#include "model/simulator.h"

namespace optpipe {

namespace {

// Each stage's device, its durations per type and the comm after it.
void fill_durations(BoundProblem& p, const Instance& inst) {
  const int S = p.S;
  p.device_of.resize(S);
  p.dur.assign(3 * S, 0.0);
  p.comm_after.assign(S, 0.0);
  for (int s = 0; s < S; ++s) {
    p.device_of[s] = inst.stages[s].device;
    for (OpType t : {OpType::F, OpType::B, OpType::W}) p.dur[static_cast<int>(t) * S + s] = inst.duration(t, s);
    if (s + 1 < S) p.comm_after[s] = inst.comm_after(s);
  }
}

// PCIe groups, numbered like the simulator's (in order of first appearance by device id).
void fill_pcie_groups(BoundProblem& p, const Instance& inst) {
  std::map<int, int> groups;
  p.group_of_device.resize(p.D);
  for (int d = 0; d < p.D; ++d) {
    p.group_of_device[d] = groups.emplace(inst.devices[d].pcie_group, static_cast<int>(groups.size())).first->second;
  }
  p.G = static_cast<int>(groups.size());
}

// Memory (memory_precedence.h has the rules and their proofs). On device d, cap = limit -
// static is the room above static memory (other stages of d only take more of it); room =
// cap - activation is what the earlier microbatches of s may hold while microbatch j holds its
// own activation (at F(s, j)'s start, and during B(s, j)). Also the offload and reload times.
void fill_memory(BoundProblem& p, const Instance& inst) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const int S = p.S;
  p.offload_time.assign(S, 0.0);
  p.reload_time.assign(S, 0.0);
  p.activation.assign(S, 0.0);
  for (int s = 0; s < S; ++s) p.activation[s] = inst.stages[s].activation;
  p.room.assign(S, nan);
  p.hold_f.assign(S, 0.0);
  p.hold_w.assign(S, 0.0);
  p.lag_wb.assign(S, 0);
  p.offload_release.assign(S, inf);
  for (int s = 0; s < S; ++s) {
    const Stage& st = inst.stages[s];
    if (st.offloadable()) {
      p.offload_time[s] = *st.offload;
      p.reload_time[s] = *st.reload;
    }
    const Device& dev = inst.devices[st.device];
    const double cap = dev.memory_limit + kMemoryTolerance - dev.static_memory;
    if (st.activation <= 0 || cap < st.activation) continue;  // no memory pressure, or nothing fits at all
    p.room[s] = cap - st.activation;
    double r2 = 0;
    if (st.offloadable()) {
      for (double r : inst.offload_levels) {
        if (r < 1.0) r2 = std::max(r2, r);
      }
      if (inst.offload_levels.back() >= 1.0) p.offload_release[s] = *st.offload;
    }
    p.hold_f[s] = (1.0 - r2) * st.activation;
    p.hold_w[s] = inst.freed_by_w(s);
    // During B(s, j) microbatch j holds its whole activation (its reload, if any, has ended)
    // and every earlier microbatch whose W has not ended holds M_W: at most k of those.
    if (p.hold_w[s] > 0) {
      const double k = std::floor(p.room[s] / p.hold_w[s]);
      if (k + 1 < p.m) p.lag_wb[s] = static_cast<int>(k) + 1;
    }
  }
}

// Memory tokens (memory_energy_bound.h): how many microbatches of a stage can hold hold_f at
// once, and the weight of a W execution in tokens.
void fill_tokens(BoundProblem& p) {
  const int S = p.S;
  p.tokens.assign(S, 0);
  for (int s = 0; s < S; ++s) {
    if (p.room[s] == p.room[s]) p.tokens[s] = std::max(1, fit_count(p.room[s] + p.activation[s], p.hold_f[s]));
  }
  // W phases (memory_energy_bound.h): g = tokens - n1, n1 the most holders (>= hold_f each)
  // that fit beside one microbatch between its B and W (holding M_W): hold_f·n1 + M_W <= cap.
  // Then n1 + g·[some microbatch is between B and W] <= tokens at every instant; the weight of a
  // W execution in token units is g / tokens.
  p.token_w_weight.assign(S, 0.0);
  p.token_w_extra.assign(S, 0);
  for (int s = 0; s < S; ++s) {
    if (p.tokens[s] <= 0 || p.tokens[s] >= p.m || p.hold_w[s] <= 0 || p.types < 3) continue;  // unused then
    const int n1 = std::clamp(fit_count(p.room[s] + p.activation[s] - p.hold_w[s], p.hold_f[s]), 0, p.tokens[s]);
    const int g = p.tokens[s] - n1;
    p.token_w_weight[s] = static_cast<double>(g) / p.tokens[s];
    p.token_w_extra[s] = std::max(0, g - 1);
  }
}

// The shortest time from F(s, j)'s end to B(s, j)'s start: up the forward chain and back down
// the backward chain, with the comms.
void fill_latency(BoundProblem& p) {
  const int S = p.S;
  p.latency.assign(S, 0.0);
  for (int s = S - 2; s >= 0; --s) {
    p.latency[s] = 2 * p.comm_after[s] + p.dur[0 * S + s + 1] + p.latency[s + 1] + p.dur[1 * S + s + 1];
  }
}

// Static tails per (type, stage), from an op's end to the end of the schedule along the
// dependency chain:
//   W(s): nothing follows.
//   B(s): its W (split), or B(s-1) after the comm (the backward chain towards stage 0).
//   F(s): B(s) of the same microbatch, or F(s+1) after the comm.
void fill_type_tails(BoundProblem& p) {
  const int S = p.S;
  p.tail.assign(3 * S, 0.0);
  auto T = [&](int type, int s) -> double& { return p.tail[type * S + s]; };
  for (int s = 0; s < S; ++s) {
    double b = p.types == 3 ? p.dur[2 * S + s] : 0.0;
    if (s > 0) b = std::max(b, p.comm_after[s - 1] + p.dur[1 * S + s - 1] + T(1, s - 1));
    T(1, s) = b;
  }
  for (int s = S - 1; s >= 0; --s) {
    double f = p.dur[1 * S + s] + T(1, s);
    if (s + 1 < S) f = std::max(f, p.comm_after[s] + p.dur[0 * S + s + 1] + T(0, s + 1));
    T(0, s) = f;
  }
}

// Tails per op: longest paths to the end over the precedences that hold in every schedule --
// the dependencies, FIFO per stage and type (the next microbatch's op of the same stage and type
// runs after it), B(s, j) after W(s, j - lag_wb), and the memory precedences of a forward that
// hold whatever the offloads (memory_precedence.h, forward_memory_edges). Every edge goes to
// the same or a later microbatch, so one pass from the last microbatch down settles them.
// Needs the memory fields (fill_memory) for forward_memory_edges.
void fill_op_tails(BoundProblem& p) {
  const int S = p.S, m = p.m;
  p.op_tails.assign(p.num_ops(), 0.0);
  auto Q = [&](int type, int s, int j) -> double& { return p.op_tails[p.op(type, s, j)]; };
  auto via = [&](int type, int s, int j) { return p.dur[type * S + s] + Q(type, s, j); };
  std::vector<int> f_lag_b(S, 0), f_lag_w(S, 0);
  for (int s = 0; s < S; ++s) forward_memory_edges(p, s, f_lag_b[s], f_lag_w[s]);
  for (int j = m - 1; j >= 0; --j) {
    if (p.types == 3) {
      for (int s = 0; s < S; ++s) {
        double q = 0;
        if (j + 1 < m) q = via(2, s, j + 1);
        if (const int k = p.lag_wb[s]; k > 0 && j + k < m) q = std::max(q, via(1, s, j + k));
        if (const int k = f_lag_w[s]; k > 0 && j + k < m) q = std::max(q, via(0, s, j + k));
        Q(2, s, j) = q;
      }
    }
    for (int s = 0; s < S; ++s) {
      double q = 0;
      if (p.types == 3) q = via(2, s, j);
      if (s > 0) q = std::max(q, p.comm_after[s - 1] + via(1, s - 1, j));
      if (j + 1 < m) q = std::max(q, via(1, s, j + 1));
      if (const int k = f_lag_b[s]; k > 0 && j + k < m) q = std::max(q, via(0, s, j + k));
      Q(1, s, j) = q;
    }
    for (int s = S - 1; s >= 0; --s) {
      double q = via(1, s, j);
      if (s + 1 < S) q = std::max(q, p.comm_after[s] + via(0, s + 1, j));
      if (j + 1 < m) q = std::max(q, via(0, s, j + 1));
      Q(0, s, j) = q;
    }
  }
}

}  // namespace

// In dependency order: the memory fields feed the tokens and the op tails, the durations all.
BoundProblem::BoundProblem(const Instance& inst)
    : D(inst.num_devices()), S(inst.num_stages()), m(inst.microbatches), types(inst.num_compute_types()) {
  fill_durations(*this, inst);
  fill_pcie_groups(*this, inst);
  fill_memory(*this, inst);
  fill_tokens(*this);
  fill_latency(*this);
  fill_type_tails(*this);
  fill_op_tails(*this);
}

double first_forward_head(const BoundProblem& p, const std::vector<double>& head, int s) {
  if (!head.empty()) {
    const double h = head[static_cast<std::size_t>(p.op(0, s, 0))];
    if (h == h) return h;
  }
  double t = 0;
  for (int u = 0; u < s; ++u) t += p.dur[0 * p.S + u] + p.comm_after[u];
  return t;
}

}  // namespace optpipe
