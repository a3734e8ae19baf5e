// A search node's times for the bounds (NodeTimes, bound_problem.h) from the simulator's state at
// a decision: the end of every op that started (known, or start + duration while it runs), each
// device's free time (no later than the decision's time), the makespan so far.
//
// Complexity: O(3·S·m + D).
#pragma once

#include "bounds/bound_problem.h"
#include "model/simulator.h"

namespace optpipe {

void fill_node_times(const BoundProblem& problem, const Simulator::Snapshot& state, double time, NodeTimes& out);

}  // namespace optpipe
