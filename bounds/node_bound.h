// The whole node bound: the node's times and transfers, the heads (heads.h), then the critical
// path, the one-machine bound per device, the channel bound and the memory energy bound, each
// with its own header and reference; the bound is their maximum. This is the one place where
// the parts are combined on the CPU: the branch-and-bound's scalar path calls node_bound(), and
// the batched path (kernels/) runs the same parts' cores phase by phase
// (bounds/node_bound_core.h), bit for bit the same value for a node that is not cut.
//
// node_bound() computes the parts cheapest first; once max(critical path, one machine) reaches
// the cutoff the node is cut whatever the others say, so the channel and memory energy parts
// are skipped (left 0; the value is then still a valid bound, and at least the cutoff). The
// caller may also leave the memory energy part out (`energy` false; the search samples it where
// it never raises the bound: search/energy_sampling.h); the value is then still a valid bound.
// node_bound_parts() computes every part in full, for tests and diagnostics (bench/bound_trace)
// that want to see which part is best where.
//
// Complexity: that of its parts (heads O(S·m³) in the worst case, one machine O(N log N)).
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "bounds/bound_problem.h"
#include "bounds/node_times.h"
#include "bounds/node_transfers.h"
#include "bounds/one_machine_bound.h"
#include "model/simulator.h"

namespace optpipe {

enum class BoundPart : std::uint8_t { kCriticalPath, kOneMachine, kChannel, kMemoryEnergy };

struct NodeBoundParts {
  double critical_path = 0, one_machine = 0, channel = 0, memory_energy = 0;
  bool memory_energy_ran = false;  // the memory energy part was computed (else it is 0)
  double value() const;
  // The part that gives the value (ties: the earlier part in the order memory energy, channel,
  // critical path, one machine -- the first strictly larger wins; critical path over one machine
  // at equal values).
  BoundPart best() const;
};

// What the parts leave behind: the node's times and transfers, heads and finishes [op], lower
// bounds on the ends of its offloads and reloads [sj]. Reused between calls.
struct NodeBoundWork {
  NodeTimes times;
  NodeTransfers transfers;
  std::vector<double> head, finish, offload_lb, reload_lb;
  std::vector<OneMachineJob> jobs;
};

// The bound of the node at simulator state `state`, decision time `time`, as the search uses it
// (see above). `channels`: whether the instance can offload at all (without, the channel part is
// 0 and skipped). `energy` false: without the memory energy part.
NodeBoundParts node_bound(const BoundProblem& problem, const Simulator::Snapshot& state, double time,
                          NodeBoundWork& work, double cutoff, bool channels, bool energy = true);

// Every part in full.
NodeBoundParts node_bound_parts(const BoundProblem& problem, const Simulator::Snapshot& state, double time,
                                NodeBoundWork& work);

}  // namespace optpipe
