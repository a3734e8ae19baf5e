// The stages s_0 < s_1 < ... that a device relaxation keeps (device_relaxation.h for one device,
// two_device_relaxation.h for two), as both searches see them: the chains between consecutive
// ones through the stages in between, which run there without a machine, and what each op adds
// to its device's memory.
//
// Complexity: O(S) for the chains, O(k) for the memory changes (k stages kept), O(1) per
// candidate for the active-orders rule. (Their dominance memo: dominance_memo.h.)
#pragma once

#include <limits>
#include <vector>

#include "bounds/bound_problem.h"
#include "model/instance.h"

namespace optpipe {

// [i]: the forward chain from kept stage i - 1's F end to kept stage i's F start (the F of the
// stages in between and every comm), and the backward one from kept stage i's B end to kept
// stage i - 1's B start; 0 for i = 0.
inline void chain_gaps(const BoundProblem& p, const std::vector<int>& stages, std::vector<double>& fgap,
                       std::vector<double>& bgap) {
  const int k = static_cast<int>(stages.size());
  fgap.assign(k, 0.0);
  bgap.assign(k, 0.0);
  for (int i = 1; i < k; ++i) {
    for (int u = stages[i - 1]; u < stages[i]; ++u) {
      fgap[i] += p.comm_after[u] + (u > stages[i - 1] ? p.dur[0 * p.S + u] : 0.0);
      bgap[i] += p.comm_after[u] + (u > stages[i - 1] ? p.dur[1 * p.S + u] : 0.0);
    }
  }
}

// [t * k + i]: the bytes an op of type t (F, B, W) of kept stage i adds to its device's memory:
// the activation at F's start, minus freed_by_b at B's end, minus freed_by_w at W's end.
inline std::vector<double> memory_changes(const Instance& inst, const std::vector<int>& stages) {
  const int k = static_cast<int>(stages.size());
  std::vector<double> change(3 * static_cast<std::size_t>(k), 0.0);
  for (int i = 0; i < k; ++i) {
    change[0 * k + i] = inst.stages[stages[i]].activation;
    change[1 * k + i] = -inst.freed_by_b(stages[i]);
    change[2 * k + i] = -inst.freed_by_w(stages[i]);
  }
  return change;
}

// The active-orders rule of both searches on one device (device_relaxation.h): an op that starts
// at or after the earliest end of a candidate B or W of the device is not branched on, except
// that B or W itself. Offer every candidate (frees: a B or a W), then ask for each.
struct EarliestFreeing {
  double end = std::numeric_limits<double>::infinity();
  int index = -1;  // the candidate that ends there
  void offer(int candidate, bool frees, double candidate_end) {
    if (frees && candidate_end < end) end = candidate_end, index = candidate;
  }
  bool skips(int candidate, double start) const { return candidate != index && start >= end; }
};

}  // namespace optpipe
