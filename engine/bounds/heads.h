// Heads: the earliest start of every op that has not started, from the node's known end times,
// the devices' free times and the dependency DAG (F chain, B chain, W after B, and FIFO per
// stage and type) plus the memory precedences of bound_problem.h (a forward waits for an
// earlier microbatch to release memory), ignoring the other ops of a device. Classic job-shop heads
// (e.g. Carlier & Pinson, "An algorithm for solving the job-shop problem", Management Science
// 35(2), 1989, §2); the one-machine and critical-path bounds read them.
//
// Complexity: O(S·m), one pass over the microbatches.
#pragma once

#include <vector>

#include "engine/bounds/bound_problem.h"

namespace optpipe {

// Fills `head[op]` for ops not started (NaN for started ones) and `finish[op]` (known end, or
// head + duration) for every op.
void compute_heads(const BoundProblem& problem, const NodeTimes& node, std::vector<double>& head,
                   std::vector<double>& finish);

}  // namespace optpipe
