#include "engine/bounds/bound_problem.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/simulator.h"

namespace optpipe {

BoundProblem::BoundProblem(const Instance& inst)
    : D(inst.num_devices()), S(inst.num_stages()), m(inst.microbatches), types(inst.num_compute_types()) {
  device_of.resize(S);
  dur.assign(3 * S, 0.0);
  comm_after.assign(S, 0.0);
  for (int s = 0; s < S; ++s) {
    device_of[s] = inst.stages[s].device;
    for (OpType t : {OpType::F, OpType::B, OpType::W}) dur[static_cast<int>(t) * S + s] = inst.duration(t, s);
    if (s + 1 < S) comm_after[s] = inst.comm_after(s);
  }
  // Memory precedences. On device d, cap = limit - static is the room above static memory
  // (other stages of d only take more of it). A microbatch j' of stage s has released its
  // activation once its B ended, or once a full offload (level 1) of it ended, no earlier than
  // F(s, j')'s end + the offload time. Until then it holds at least (1 - r2)·act, with r2 the
  // largest offload level below 1 (0 if the stage cannot offload). At F(s, j)'s start, the new
  // activation and the unreleased earlier ones fit: (j - released)·(1 - r2)·act + act <= cap,
  // so released >= j - k with k = (cap - act) / ((1 - r2)·act). Release times are
  // nondecreasing in j' (B and F are FIFO), and offloads share one D2H channel, so F(s, j)
  // waits until j - k releases can have happened (heads.cc, memory_release) -- lag_b = k + 1.
  // Weight activations cannot be offloaded: for a stage that cannot offload at all, every
  // earlier microbatch whose W has not ended holds at least M_W, so (j - w)·M_W + act <= cap with
  // w the Ws done: W(s, j - k_w - 1) has ended, k_w = (cap - act) / M_W -- lag_w = k_w + 1.
  lag_b.assign(S, 0);
  lag_w.assign(S, 0);
  offload_release.assign(S, std::numeric_limits<double>::infinity());
  for (int s = 0; s < S; ++s) {
    const Stage& st = inst.stages[s];
    const Device& dev = inst.devices[st.device];
    const double cap = dev.memory_limit + kMemoryTolerance - dev.static_memory;
    if (st.activation <= 0 || cap < st.activation) continue;  // no memory pressure, or nothing fits at all
    double r2 = 0;
    if (st.offloadable()) {
      for (double r : inst.offload_levels) {
        if (r < 1.0) r2 = std::max(r2, r);
      }
      if (inst.offload_levels.back() >= 1.0) offload_release[s] = *st.offload;
    }
    const double held = (1.0 - r2) * st.activation;
    if (held > 0) {
      const double k = std::floor((cap - st.activation) / held);
      if (k + 1 < m) lag_b[s] = static_cast<int>(k) + 1;
    }
    const double wact = inst.freed_by_w(s);
    if (!st.offloadable() && wact > 0) {
      const double kw = std::floor((cap - st.activation) / wact);
      if (kw + 1 < m) lag_w[s] = static_cast<int>(kw) + 1;
    }
  }

  // Static tails, from an op's end to the end of the schedule along the dependency chain:
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
}

}  // namespace optpipe
