// Critical-path bound with heads and tails: the makespan is at least, for every op, its
// earliest finish (known end, or head + duration) plus its tail (the shortest chain of
// successors after it). The classic longest-path relaxation of disjunctive scheduling that drops
// the machine capacity (e.g. Brucker, "Scheduling Algorithms", 5th ed., §6.4, job shop lower
// bounds). Valid at any node of the time-ordered search: heads use only final times.
//
// Complexity: O(S·m) given the heads.
#pragma once

#include <vector>

#include "bounds/bound_problem.h"
#include "bounds/bound_view.h"

namespace optpipe {

// The bound from the node's makespan so far and `finish` [op] (host and device code).
OPTPIPE_HD inline double critical_path_core(const BoundProblemView& p, double makespan_so_far, const double* finish) {
  double bound = makespan_so_far;
  for (int type = 0; type < p.types; ++type) {
    for (int s = 0; s < p.S; ++s) {
      for (int j = 0; j < p.m; ++j) {
        const int o = p.op(type, s, j);
        bound = hd::max(bound, finish[o] + p.op_tails[o]);
      }
    }
  }
  return bound;
}

double critical_path_bound(const BoundProblem& problem, const NodeTimes& node, const std::vector<double>& finish);

}  // namespace optpipe
