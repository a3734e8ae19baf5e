#include "bounds/bound_problem.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "bounds/memory_precedence.h"
#include "model/simulator.h"

namespace optpipe {

BoundProblem::BoundProblem(const Instance& inst)
    : D(inst.num_devices()), S(inst.num_stages()), m(inst.microbatches), types(inst.num_compute_types()) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  device_of.resize(S);
  dur.assign(3 * S, 0.0);
  comm_after.assign(S, 0.0);
  for (int s = 0; s < S; ++s) {
    device_of[s] = inst.stages[s].device;
    for (OpType t : {OpType::F, OpType::B, OpType::W}) dur[static_cast<int>(t) * S + s] = inst.duration(t, s);
    if (s + 1 < S) comm_after[s] = inst.comm_after(s);
  }
  // PCIe groups, numbered like the simulator's (in order of first appearance by device id).
  std::map<int, int> groups;
  group_of_device.resize(D);
  for (int d = 0; d < D; ++d) {
    group_of_device[d] = groups.emplace(inst.devices[d].pcie_group, static_cast<int>(groups.size())).first->second;
  }
  G = static_cast<int>(groups.size());
  offload_time.assign(S, 0.0);
  reload_time.assign(S, 0.0);

  // Memory (memory_precedence.h has the rules and their proofs). On device d, cap = limit -
  // static is the room above static memory (other stages of d only take more of it); room =
  // cap - activation is what the earlier microbatches of s may hold while microbatch j holds its
  // own activation (at F(s, j)'s start, and during B(s, j)).
  activation.assign(S, 0.0);
  for (int s = 0; s < S; ++s) activation[s] = inst.stages[s].activation;
  room.assign(S, nan);
  hold_f.assign(S, 0.0);
  hold_w.assign(S, 0.0);
  lag_wb.assign(S, 0);
  offload_release.assign(S, inf);
  for (int s = 0; s < S; ++s) {
    const Stage& st = inst.stages[s];
    if (st.offloadable()) {
      offload_time[s] = *st.offload;
      reload_time[s] = *st.reload;
    }
    const Device& dev = inst.devices[st.device];
    const double cap = dev.memory_limit + kMemoryTolerance - dev.static_memory;
    if (st.activation <= 0 || cap < st.activation) continue;  // no memory pressure, or nothing fits at all
    room[s] = cap - st.activation;
    double r2 = 0;
    if (st.offloadable()) {
      for (double r : inst.offload_levels) {
        if (r < 1.0) r2 = std::max(r2, r);
      }
      if (inst.offload_levels.back() >= 1.0) offload_release[s] = *st.offload;
    }
    hold_f[s] = (1.0 - r2) * st.activation;
    hold_w[s] = inst.freed_by_w(s);
    // During B(s, j) microbatch j holds its whole activation (its reload, if any, has ended)
    // and every earlier microbatch whose W has not ended holds M_W: at most k of those.
    if (hold_w[s] > 0) {
      const double k = std::floor(room[s] / hold_w[s]);
      if (k + 1 < m) lag_wb[s] = static_cast<int>(k) + 1;
    }
  }

  tokens.assign(S, 0);
  for (int s = 0; s < S; ++s) {
    if (room[s] == room[s]) tokens[s] = std::max(1, fit_count(room[s] + activation[s], hold_f[s]));
  }
  // W phases (memory_energy_bound.h): g = tokens - n1, n1 the most holders (>= hold_f each)
  // that fit beside one microbatch between its B and W (holding M_W): hold_f·n1 + M_W <= cap.
  // Then n1 + g·[some microbatch is between B and W] <= tokens at every instant; the weight of a
  // W execution in token units is g / tokens.
  token_w_weight.assign(S, 0.0);
  token_w_extra.assign(S, 0);
  for (int s = 0; s < S; ++s) {
    if (tokens[s] <= 0 || tokens[s] >= m || hold_w[s] <= 0 || types < 3) continue;  // unused then
    const int n1 = std::clamp(fit_count(room[s] + activation[s] - hold_w[s], hold_f[s]), 0, tokens[s]);
    const int g = tokens[s] - n1;
    token_w_weight[s] = static_cast<double>(g) / tokens[s];
    token_w_extra[s] = std::max(0, g - 1);
  }
  latency.assign(S, 0.0);
  for (int s = S - 2; s >= 0; --s) {
    latency[s] = 2 * comm_after[s] + dur[0 * S + s + 1] + latency[s + 1] + dur[1 * S + s + 1];
  }

  // Static tails per (type, stage), from an op's end to the end of the schedule along the
  // dependency chain:
  //   W(s): nothing follows.
  //   B(s): its W (split), or B(s-1) after the comm (the backward chain towards stage 0).
  //   F(s): B(s) of the same microbatch, or F(s+1) after the comm.
  tail.assign(3 * S, 0.0);
  auto T = [&](int type, int s) -> double& { return tail[type * S + s]; };
  for (int s = 0; s < S; ++s) {
    double b = types == 3 ? dur[2 * S + s] : 0.0;
    if (s > 0) b = std::max(b, comm_after[s - 1] + dur[1 * S + s - 1] + T(1, s - 1));
    T(1, s) = b;
  }
  for (int s = S - 1; s >= 0; --s) {
    double f = dur[1 * S + s] + T(1, s);
    if (s + 1 < S) f = std::max(f, comm_after[s] + dur[0 * S + s + 1] + T(0, s + 1));
    T(0, s) = f;
  }

  // Tails per op: longest paths to the end over the precedences that hold in every schedule --
  // the dependencies, FIFO per stage and type (the next microbatch's op of the same stage and type
  // runs after it), B(s, j) after W(s, j - lag_wb), and the memory precedences of a forward that
  // hold whatever the offloads (memory_precedence.h, forward_memory_edges). Every edge goes to
  // the same or a later microbatch, so one pass from the last microbatch down settles them.
  op_tails.assign(num_ops(), 0.0);
  auto Q = [&](int type, int s, int j) -> double& { return op_tails[op(type, s, j)]; };
  auto via = [&](int type, int s, int j) { return dur[type * S + s] + Q(type, s, j); };
  std::vector<int> f_lag_b(S, 0), f_lag_w(S, 0);
  for (int s = 0; s < S; ++s) forward_memory_edges(*this, s, f_lag_b[s], f_lag_w[s]);
  for (int j = m - 1; j >= 0; --j) {
    if (types == 3) {
      for (int s = 0; s < S; ++s) {
        double q = 0;
        if (j + 1 < m) q = via(2, s, j + 1);
        if (const int k = lag_wb[s]; k > 0 && j + k < m) q = std::max(q, via(1, s, j + k));
        if (const int k = f_lag_w[s]; k > 0 && j + k < m) q = std::max(q, via(0, s, j + k));
        Q(2, s, j) = q;
      }
    }
    for (int s = 0; s < S; ++s) {
      double q = 0;
      if (types == 3) q = via(2, s, j);
      if (s > 0) q = std::max(q, comm_after[s - 1] + via(1, s - 1, j));
      if (j + 1 < m) q = std::max(q, via(1, s, j + 1));
      if (const int k = f_lag_b[s]; k > 0 && j + k < m) q = std::max(q, via(0, s, j + k));
      Q(1, s, j) = q;
    }
    for (int s = S - 1; s >= 0; --s) {
      double q = via(1, s, j);
      if (s + 1 < S) q = std::max(q, comm_after[s] + via(0, s + 1, j));
      if (j + 1 < m) q = std::max(q, via(0, s, j + 1));
      Q(0, s, j) = q;
    }
  }
}

}  // namespace optpipe
