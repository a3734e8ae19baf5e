// Periodic offload: the cyclic template of periodic_template.h (every device repeats one
// pattern per cycle, offloads where the planned memory would overflow), tried over a grid of
// cycles and 72 variants (offload/reload margins 0, 1/4 and 1/2 of a transfer; the plan's
// transfers booked on the shared channels, or not, or the steady state's share of offloads
// spread evenly first at 1 or 1.15 times; B's placed off the forward's residues, with each W
// after the next forward where it does not fit before it or always right after its B, or B's at
// their chain's times; the two GPUs of a PCIe group taking turns on its channels, or not); keeps
// the fastest simulated schedule that fits. On the family of bench/README.md each of these choices
// is the best one somewhere. Any placement: with several stages per device (V, loop) each device
// fits all its stages' ops into the cycle and plans its memory over them (periodic_template.h);
// there only where something can offload (without, the V and interleaved schedules cover it).
// Llama-2 7B, 16 GPUs x 64 microbatches in a loop at 13.6 GiB: 2174.0 ms, where AdaOffload on
// interleaved 1F1B gives 3251.9 (bench/README.md, "Stage partitioning").
//
// Why: under tight memory at 16-32 GPUs the memory-oblivious bases that PipeOffload and
// AdaOffload edit hold each activation for 1F1B's (S - s) cycles, where the pipeline's latency
// above stage s is enough; a template built from the F and B chains keeps every activation for
// about that latency, so fewer offloads are needed, and the PCIe channel (shared by two GPUs)
// stops being the bottleneck sooner (bench/README.md, "The solver at scale").
// Source: modulo scheduling (Rau, MICRO-27 1994), see periodic_template.h.
//
// The grid in three passes: every cycle with 13 of the variants, then the 6 best cycles with the
// other 59, then the best template of each of the 3 best variants at 7 cycles between its cycle
// and each grid neighbour (the makespan is not monotone in the cycle, and the grid's steps are
// 1.9% apart: Llama-2 7B, 16 x 64 at 4 activations 2308.54 -> 2298.09 ms, GPT-3 14.6B at 8
// activations 979.47 -> 975.22 with the best variant alone, and 967.29 -> 958.15 with three).
//
// Complexity: 13G + 396 templates, each O(S·m·K) to plan and one simulation O(N log N); G = 60
// cycles (from the largest per-device F + B + W up to 3 times it, 1.9% apart): 0.1-0.35 s at
// 16 x 64, 1.1-2.1 s at 32 x 128 on the development machine, one thread. Each pass's templates
// are tried on every thread of the caller's TBB arena (one simulator per thread) and the best is
// taken in the listed order afterwards, so the result does not depend on the threads: on two
// cores 2.6 -> 1.4 s on bench-gpt3-28.3b-32x128-2act (bench/README.md, "Periodic on both cores").
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
  bool searches() const override { return true; }
};

}  // namespace optpipe
