// Targets above a known lower bound, for searches that are only asked whether a schedule reaches
// a target (below-only): probing (search/bound_probing.h) and the two-device bound by targets
// (two_device_relaxation.h). The k-th target is the bound raised by 0.1%, 0.25%, 0.5%, 1%, then
// 2% (the last step repeats), plus a hair of 1e-6 ms: the relaxations return their value less
// 1e-7 ms, and the optimum may be the bound itself. Probing stops at 1% since its searches go on
// from the last target's cut nodes (ProbingOptions::widest_step); before that, 1% as the last
// step (with probing's close range 1% too) made seed-17 small-v-02 of bench/solvers/random_small.py
// take 3.7 s instead of 2.0 s (its optimum 3.8% above the root bound).
//
// Complexity: O(1).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>

namespace optpipe {

inline constexpr std::array<double, 5> kTargetSteps = {0.001, 0.0025, 0.005, 0.01, 0.02};
inline constexpr double kTargetHair = 1e-6;  // ms (search_shared.h's kRelaxationTolerance)

// The k-th target above `bound` (k from 0).
inline double target_above(double bound, std::size_t k) {
  return bound * (1 + kTargetSteps[std::min(k, kTargetSteps.size() - 1)]) + kTargetHair;
}

}  // namespace optpipe
