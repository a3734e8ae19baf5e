// PipeOffload-style offload (Wan et al., "PipeOffload: Improving Scalability of Pipeline
// Parallelism with Memory Optimization", ICML 2025, arXiv 2503.01328, §2 and §4.2).
//
// Starting from a memory-oblivious schedule (base_schedules.h), offload the activations whose
// F→B lifespan is long enough to hide the round trip, longest lifespans first, at the largest
// offload level; issue each reload as late as it stays hidden (its request, the end of the
// compute action before it, plus the reload time still ends before B starts in the base
// timing), like PipeOffload's "offload left to right, reload right to left" slot rule. Variants:
// the lifespan filter (≥ 1× or ≥ 3× the round trip, the latter sail-sg's filter) and selective
// vs full offload (the longer-lived half of each device's offloadable activations, as PO-H
// offloads half the stages, or all of them, as PO-F), and one more of this project's: every
// offloadable activation, each reload just before its B. Under very tight memory (room for less
// than two activations) the base timing is no guide to when memory is free, every reload placed
// early holds memory that the next forward needs, and only the late variant fits:
// bench-gpt3-14.6b-16x64-1.5act, 1F1B with late reloads, 2359.66 ms where the other variants
// deadlock and the best other heuristic (waves) takes 3267.07 ms. A sixth variant (also ours)
// is the late one that keeps, on a GPU of one stage, what its spare memory holds: all of its
// activations when the base never has more in flight than fit, else one microbatch in every k
// while at most c - 1 kept ones are in flight (c the activations that fit); where that beats
// offloading all and is the best variant, a few spreads of the kept ones are tried on its base,
// then on the same base with 1, 2, ... warm-up forwards fewer where it has 1F1B's shape, while
// that helps (how the two GPUs of a PCIe group take turns on the shared channels depends on
// both). On the 1.5act case stage 0 holds 4 of its 16 activations in flight: 2278.29 ms (1F1B
// with 2 warm-up forwards fewer; with 3 fewer the pipeline starves).
// Keeps the best feasible variant.
//
// Complexity: for each of ≤ 16 bases and 6 variants, one pass over the N ops to place reloads
// (O(N · L) with L the longest list), O(m^2) per stage for the spare variant's open counts, and
// one simulation; then up to 5 · 3 · 3 · (k + 2) more simulations of the spare variant.
#pragma once

#include "heuristics/heuristic.h"

namespace optpipe {

class PipeOffload final : public Heuristic {
 public:
  std::string name() const override { return "pipe-offload"; }
  std::string title() const override { return "PipeOffload"; }
  std::string description() const override {
    return "offload long-lived activations, reload as late as hidden (PipeOffload, arXiv 2503.01328, §2, §4.2)";
  }
  Built build(const Instance& instance, const RunLimits& limits) const override;
  using Heuristic::build;
  bool memory_aware() const override { return true; }
  bool searches() const override { return true; }
};

}  // namespace optpipe
