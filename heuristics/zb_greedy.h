// The Zero Bubble paper's memory-aware greedy scheduler (Qi et al., "Zero Bubble Pipeline
// Parallelism", arXiv 2401.10241, §3.1 "heuristic algorithm"; ZB-1p / ZB-2p), generalised to
// any placement and to per-device memory limits.
//
// A list scheduler that follows time: it repeatedly takes the device that can start something
// earliest and decides what it runs next, with the spec's timing (no offload, so an F must fit
// when it starts):
//   1. a ready B first (B is on the critical path), when `prioritize_b`;
//   2. else a ready F if it fits under the device's cap (warm-up fills with F while memory
//      allows, then the steady state falls into 1F-1B);
//   3. else a pending W: always when memory is short (it frees M_W) or when nothing is ready;
//      when something becomes ready within less than T_W, only if `fill_small_gaps`;
//   4. else wait for the next ready op.
// Remaining Ws run at the end. The cap of device d is min(limit, static + k · largest activation
// on d): k = p gives ZB-1p's budget, k = 2p ZB-2p's, and "none" the device's full limit. A small
// grid over k ∈ {p, 2p, none}, prioritize_b and fill_small_gaps (12 variants) keeps the best
// makespan. On V and loop placements a run can fill a device with earlier stages' forwards so
// that no later stage fits anywhere; such a run backs off and is repeated with round-trip
// admission (ZbGreedyOptions::reserve_round_trip) instead of giving up.
//
// Complexity: each variant schedules N = (2 or 3)·S·m ops with O(S) work per decision:
// O(N·S) per variant.
#pragma once

#include <optional>
#include <string>

#include "heuristics/heuristic.h"

namespace optpipe {

struct ZbGreedyOptions {
  bool prioritize_b = true;
  bool fill_small_gaps = false;
  // Activation budget in units of the device's largest activation; nullopt: the memory limit.
  std::optional<double> cap_activations;
  // Ignore the devices' memory limits (only the cap, if any, applies): memory-oblivious
  // starting points for the offload heuristics, which then offload what does not fit.
  bool ignore_memory = false;
  // Admit a microbatch into a device only when its whole round trip there fits: an F must leave
  // room for the later stages' activations of every microbatch that has entered the device and
  // not reached them (V and loop placements; nothing changes with one stage per device). Then
  // every microbatch in flight can always go on, so the run never gets stuck unless one
  // microbatch alone does not fit. The heuristic backs off to this when a run gets stuck.
  bool reserve_round_trip = false;
};

// One greedy run; nullopt (and *why) when it cannot place the ops within memory.
std::optional<Schedule> zb_greedy_schedule(const Instance& instance, const ZbGreedyOptions& options,
                                           std::string* why);

class ZbGreedy final : public Heuristic {
 public:
  std::string name() const override { return "zb-greedy"; }
  std::string title() const override { return "ZB greedy"; }
  std::string description() const override {
    return "memory-aware greedy list scheduler, ZB-1p/2p style (Zero Bubble, arXiv 2401.10241, §3.1); any placement";
  }
  Built build(const Instance& instance, const RunLimits& limits) const override;
  using Heuristic::build;
  bool memory_aware() const override { return true; }
};

}  // namespace optpipe
