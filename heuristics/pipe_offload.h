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
// deadlock and the best other heuristic (waves) takes 3267.07 ms. Keeps the best feasible variant.
//
// Complexity: for each of ≤ 4 bases and 5 variants, one pass over the N ops to place reloads
// (O(N · L) with L the longest list) and one simulation.
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
};

}  // namespace optpipe
