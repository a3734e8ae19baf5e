// Critical-path bound with heads and tails: the makespan is at least, for every op, its
// earliest finish (known end, or head + duration) plus its tail (the shortest chain of
// successors after it). The classic longest-path relaxation of disjunctive scheduling that drops
// the machine capacity (e.g. Brucker, "Scheduling Algorithms", 5th ed., §6.4, job shop lower
// bounds). Valid at any node of the time-ordered search: heads use only final times.
//
// Complexity: O(S·m) given the heads.
#pragma once

#include <vector>

#include "engine/bounds/bound_problem.h"

namespace optpipe {

double critical_path_bound(const BoundProblem& problem, const NodeTimes& node, const std::vector<double>& finish);

}  // namespace optpipe
