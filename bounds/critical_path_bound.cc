#include "bounds/critical_path_bound.h"

namespace optpipe {

double critical_path_bound(const BoundProblem& p, const NodeTimes& node, const std::vector<double>& finish) {
  return critical_path_core(view_of(p), node.makespan_so_far, finish.data());
}

}  // namespace optpipe
