#include "engine/bounds/critical_path_bound.h"

#include <algorithm>

namespace optpipe {

double critical_path_bound(const BoundProblem& p, const NodeTimes& node, const std::vector<double>& finish) {
  double bound = node.makespan_so_far;
  for (int type = 0; type < p.types; ++type) {
    for (int s = 0; s < p.S; ++s) {
      for (int j = 0; j < p.m; ++j) bound = std::max(bound, finish[p.op(type, s, j)] + p.op_tail(type, s, j));
    }
  }
  return bound;
}

}  // namespace optpipe
