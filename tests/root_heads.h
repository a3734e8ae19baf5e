// The heads [op] at the root of the search, as the solver computes them (the bounds' tests).
#pragma once

#include <vector>

#include "bounds/bound_problem.h"
#include "bounds/heads.h"
#include "bounds/node_times.h"
#include "model/instance.h"
#include "model/simulator.h"

namespace optpipe::test_support {

inline std::vector<double> root_heads(const Instance& inst, const BoundProblem& p) {
  Simulator sim(inst);
  sim.start_open();
  const Simulator::Step step = sim.advance();
  NodeTimes times;
  fill_node_times(p, sim.snapshot(), step.time, times);
  std::vector<double> head, finish;
  compute_heads(p, times, head, finish);
  return head;
}

}  // namespace optpipe::test_support
