// The time quantum of an instance: the largest q such that every time the simulator adds to
// another (spec §4: F, B and W durations, an unsplit B's backward + weight, the comm between two
// stages, and each offload level times each offload and reload time) is a whole multiple of q.
//
// Why. Every time in the spec's timing is 0, or the end of something (a start plus a duration),
// or such an end plus a comm, and a start is the latest of such times: so every start, end and
// makespan is a sum of those durations, a whole multiple of q. A lower bound b of the makespan
// is then a bound of q·⌈b/q⌉ too, and no schedule lies strictly between two multiples: a node of
// the tree whose bound is above `incumbent − q` can hold nothing better than the incumbent
// (search/search_shared.h). The random instances of bench/solvers/ give their times in
// hundredths of a millisecond (q = 0.01 ms); seed-29 small-loop-04's root bound 33.308 ms is
// then 33.31, against its optimum 33.32. Instances whose times have no common quantum of at
// least kMinTimeQuantum (the generated ones, with times from FLOP counts) get q = 0: nothing is
// rounded.
//
// How. The fewest decimals k ≤ 4 in which every time is written (each within 1e-12 of itself
// of a whole number of 10^-k ms: the rounding of a decimal read into a double), then the
// greatest common divisor of those whole numbers. O(S · L) for S stages and L offload levels.
#pragma once

#include "model/instance.h"

namespace optpipe {

// The smallest quantum taken; below it the rounding tolerances (1e-9 ms on times, 1e-6 ms on
// the relaxations' bounds) would no longer be small against half a quantum.
inline constexpr double kMinTimeQuantum = 1e-4;

// q as above, or 0 when there is none of at least kMinTimeQuantum (or every time is 0), or when
// the instance is so long that a time's rounding noise (1e-10 of it) could reach a hundredth of
// q: every makespan is at most the sum of all durations, transfers and comms (1e6 ms for 0.01).
double time_quantum(const Instance& instance);

// The least multiple of q at or above b: b itself when q is 0. Times within 1e-9 ms plus 1e-10
// of themselves above a multiple count as that multiple (sums of durations carry rounding noise).
double quantum_ceil(double b, double q);

// The largest multiple of q at or below t (q = 0: t). Within 1e-10 ms below a multiple counts
// as that multiple.
double quantum_floor(double t, double q);

}  // namespace optpipe
