#include "bounds/node_bound.h"

#include <algorithm>

#include "bounds/channel_bound.h"
#include "bounds/critical_path_bound.h"
#include "bounds/heads.h"
#include "bounds/memory_energy_bound.h"

namespace optpipe {

double NodeBoundParts::value() const { return std::max({critical_path, one_machine, channel, memory_energy}); }

BoundPart NodeBoundParts::best() const {
  if (memory_energy > std::max({critical_path, one_machine, channel})) return BoundPart::kMemoryEnergy;
  if (channel > std::max(critical_path, one_machine)) return BoundPart::kChannel;
  return critical_path >= one_machine ? BoundPart::kCriticalPath : BoundPart::kOneMachine;
}

namespace {

// The node's times, transfers and heads into `w`.
void prepare(const BoundProblem& p, const Simulator::Snapshot& st, double t, NodeBoundWork& w) {
  fill_node_times(p, st, t, w.times);
  fill_node_transfers(p, st, t, w.transfers);
  compute_heads(p, w.times, w.head, w.finish, &w.transfers, &w.offload_lb, &w.reload_lb);
}

}  // namespace

NodeBoundParts node_bound(const BoundProblem& p, const Simulator::Snapshot& st, double t, NodeBoundWork& w,
                          double cutoff, bool channels, bool energy) {
  prepare(p, st, t, w);
  NodeBoundParts b;
  b.critical_path = critical_path_bound(p, w.times, w.finish);
  b.one_machine = one_machine_bound(p, w.head, w.jobs);
  if (std::max(b.critical_path, b.one_machine) >= cutoff) return b;
  b.channel = channels ? channel_bound(p, w.transfers, w.finish, w.reload_lb, w.jobs) : 0.0;
  if (!energy) return b;
  // The energy bound may stop early once it cannot exceed the other three.
  b.memory_energy = memory_energy_bound(p, w.times, &w.transfers, w.head, w.finish, w.offload_lb,
                                        std::max({b.critical_path, b.one_machine, b.channel}));
  b.memory_energy_ran = true;
  return b;
}

NodeBoundParts node_bound_parts(const BoundProblem& p, const Simulator::Snapshot& st, double t, NodeBoundWork& w) {
  prepare(p, st, t, w);
  NodeBoundParts b;
  b.critical_path = critical_path_bound(p, w.times, w.finish);
  b.one_machine = one_machine_bound(p, w.head, w.jobs);
  b.channel = channel_bound(p, w.transfers, w.finish, w.reload_lb, w.jobs);
  b.memory_energy = memory_energy_bound(p, w.times, &w.transfers, w.head, w.finish, w.offload_lb);
  b.memory_energy_ran = true;
  return b;
}

}  // namespace optpipe
