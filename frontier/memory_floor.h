// The memory floor: the smallest per-GPU memory limit (one value on every device) at which any
// schedule of an instance exists, the device and stage that set it, and the proof.
//
// Lower bound, an argument over every schedule of spec §4 (../shared/spec/problem.md). Take any
// microbatch j and a device d with stages s_1 < ... < s_k. When B(s_i, j) starts:
//   - (s_i, j)'s activation is wholly resident: an offloaded part comes back with its reload,
//     which starts after the offload ended and ends before B starts;
//   - for each lower stage s_l (l < i) of d, F(s_l, j) has started (the forward chain reaches
//     s_i through it) and B(s_l, j) has not ended (the backward chain reaches s_l through
//     B(s_i, j)), so at least the part of its activation that cannot be offloaded is resident:
//     (1 - r*) · activation with r* the highest offload level, all of it on a stage that cannot
//     offload (its "held" part).
// Memory rises only at additions, each checked against the limit, so every instant is within
// it: limit >= static[d] + activation[s_i] + Σ_{l<i} held(s_l) for every d and i. With one
// stage per device this is obviously_infeasible's test (model/validator.h): static + one
// activation.
//
// Upper bound, a schedule: waves of one microbatch (heuristics/waves.h, k = 1; with offload,
// every offloadable forward at r* and its reload right before its B) hold on device d exactly
// such a set at any time, and at most the bound. The waves are simulated at the bound (the
// memory waits they need end: they wait for offloads in flight); when they complete, the
// floor is the bound, proven (`proven`). Otherwise -- not expected, it would be a hole in the
// argument -- `limit` is the waves' own peak without waits (where they surely fit), `lower` the
// bound, and `proven` false.
//
// Complexity: O(S) for the bound, plus one or two simulations, O(N log N) for N actions.
#pragma once

#include <string>
#include <vector>

#include "model/instance.h"

namespace optpipe::frontier {

struct MemoryFloor {
  double limit = 0;              // bytes: a schedule fits at this limit on every device
  double lower = 0;              // bytes: no schedule fits below this (== limit when proven)
  bool proven = false;           // limit == lower
  int device = -1;               // the device whose bound is the largest
  int stage = -1;                // ... and the stage whose B sets it
  double static_memory = 0;      // that device's static memory
  double activation = 0;         // that stage's activation
  double held = 0;               // the device's lower stages' parts that cannot be offloaded
  std::vector<double> per_device;  // every device's own bound (bytes)
  std::string witness;           // the schedule that fits at `limit`, e.g. "waves of 1 microbatch, full offload"

  // "device 3 (stage 3): static 6.00 GiB + stage 3's activation 1.40 GiB = 7.40 GiB"
  // (+ "+ 0.70 GiB that stages 0, 1 of the device cannot offload" when held > 0).
  std::string explain() const;
};

MemoryFloor memory_floor(const Instance& instance);

}  // namespace optpipe::frontier
