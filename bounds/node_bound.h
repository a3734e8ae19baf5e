// The whole node bound with its parts, computed the way the search's bound() computes it
// (search/solver.cc): the node's times and transfers, the heads (heads.h), then the
// critical path, the one-machine bound per device, the channel bound and the memory energy
// bound, each with its own header and reference. The search stops early once a part reaches
// its cutoff; this computes every part, for tests and diagnostics (bench/bound_trace) that want
// to see which part is best where.
//
// Complexity: that of its parts (heads O(S·m³) in the worst case, one machine O(N log N)).
#pragma once

#include <vector>

#include "bounds/bound_problem.h"
#include "bounds/node_times.h"
#include "bounds/node_transfers.h"
#include "bounds/one_machine_bound.h"
#include "model/simulator.h"

namespace optpipe {

struct NodeBoundParts {
  double critical_path = 0, one_machine = 0, channel = 0, memory_energy = 0;
  double value() const;
};

// What the parts leave behind: the node's times and transfers, heads and finishes [op], lower
// bounds on the ends of its offloads and reloads [sj]. Reused between calls.
struct NodeBoundWork {
  NodeTimes times;
  NodeTransfers transfers;
  std::vector<double> head, finish, offload_lb, reload_lb;
  std::vector<OneMachineJob> jobs;
};

// The bound of the node at simulator state `state`, decision time `time`.
NodeBoundParts node_bound_parts(const BoundProblem& problem, const Simulator::State& state, double time,
                                NodeBoundWork& work);

}  // namespace optpipe
