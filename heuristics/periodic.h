// Periodic offload: the cyclic template of periodic_template.h (every device repeats one
// pattern per cycle, offloads where the planned memory would overflow), tried over a grid of
// cycles, offload/reload margins, and the shared channels booked or not; keeps the fastest simulated schedule that fits.
//
// Why: under tight memory at 16-32 GPUs the memory-oblivious bases that PipeOffload and
// AdaOffload edit hold each activation for 1F1B's (S - s) cycles, where the pipeline's latency
// above stage s is enough; a template built from the F and B chains keeps every activation for
// about that latency, so fewer offloads are needed, and the PCIe channel (shared by two GPUs)
// stops being the bottleneck sooner (bench/README.md, "The solver at scale").
// Source: modulo scheduling (Rau, MICRO-27 1994), see periodic_template.h.
//
// Complexity: G cycles x 3 margins x 2 (channels booked or not), each O(S·m·K) to plan and one simulation O(N log N);
// G = 60 (from the largest per-device F + B + W up to 3 times it, 1.9% apart).
#pragma once

#include "heuristics/heuristic.h"

namespace optpipe {

class PeriodicOffload final : public Heuristic {
 public:
  std::string name() const override { return "periodic"; }
  std::string title() const override { return "Periodic"; }
  std::string description() const override {
    return "cyclic template from the F and B chains, offloads where memory overflows (modulo scheduling, Rau 1994)";
  }
  Built build(const Instance& instance, const RunLimits& limits) const override;
  using Heuristic::build;
  bool memory_aware() const override { return true; }
};

}  // namespace optpipe
