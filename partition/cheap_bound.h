// The cheap bounds of a split (issue 22), computed before any schedule: a lower bound on the
// makespan and the memory floor of every device. Partitioning solves only splits whose floor
// fits and whose bound can still beat the best makespan found.
//
// Lower bound (a per-device relaxation; cf. the classic flow-shop machine bound, Ignall and
// Schrage 1965, and the critical-path heads/tails of bounds/). For device d with stages s_1 < ...
// and m microbatches, F_d, B_d, W_d the sums of its stages' durations (unsplit: B includes W,
// W = 0), and s_1 its first stage:
//   head = sum over t < s_1 of (F_t + comm after t): every op of d waits for F(s_1, 0), which
//          waits for microbatch 0 to cross the stages before s_1;
//   tail = sum over t < s_1 of (comm after t + B_t), + W_0 when split and s_1 > 0: after the last
//          B of d, which is B(s_1, m-1) (it follows every other F and B of d), microbatch m-1's
//          backward still crosses the stages before s_1 and W(0, m-1) runs last;
//   LB_d = head + m (F_d + B_d) + max(m W_d, tail): at the end of B(s_1, m-1) the device has
//          run all its F and B and the W it ran before; then either its remaining W or the tail.
// LB = max over devices. It ignores memory, so it is far from tight when memory decides.
//
// Memory floor of device d (the least peak memory any schedule needs): static + max over its
// stages s_k (in stage order) of activation(s_k) + sum over i < k of keep_i activation(s_i),
// where keep_i = 1 - the largest offload level (1 when s_i cannot offload): F(s_k, 0) allocates
// its activation while microbatch 0 of every earlier stage of d awaits its B. Running one
// microbatch at a time (offloading what may go, reloading before each B) reaches it, so a split
// fits the limit exactly when every floor does.
// Cost: O(S) per split.
#pragma once

#include <string>
#include <vector>

#include "model/instance.h"

namespace optpipe::partition {

struct CheapBound {
  double value = 0;   // ms
  int device = -1;    // the device that gives it (-1: no stage)
  double work = 0;    // that device's compute per iteration, m (F + B + W)
  double fill = 0;    // value - work: pipeline fill and drain
};

struct MemoryFloor {
  int device = 0;
  double bytes = 0;         // static + activations
  double static_bytes = 0;
  double activations = 0;   // what its stages must hold at once
  double limit = 0;
  bool fits() const { return bytes <= limit; }
};

// LB_d from its parts (above). O(1).
double device_lower_bound(double head, double tail, double forward_backward, double weight, int microbatches);
// The activation part of a floor: stages' activations in stage order, and the fraction each keeps
// on the device at best (1 - largest offload level, or 1). O(k).
double activation_floor(const std::vector<double>& activations, const std::vector<double>& keep);

CheapBound cheap_bound(const Instance& instance);
std::vector<MemoryFloor> memory_floors(const Instance& instance);
// The floor with the least room (largest bytes - limit).
const MemoryFloor& tightest(const std::vector<MemoryFloor>& floors);

}  // namespace optpipe::partition
