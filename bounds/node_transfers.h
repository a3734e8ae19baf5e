// What a search node knows about offloads and reloads, as plain arrays (indexed sj = s·m + j and
// by PCIe group): the offload level of every forward already listed and the times of the
// transfers that started. Read by the reload-aware heads (heads.h, memory_precedence.h) and the
// channel bound (channel_bound.h). At the root nothing is listed, and those bounds reduce to
// their static forms.
//
// Complexity: fill_node_transfers is O(S·m + G + transfers so far).
#pragma once

#include <vector>

#include "bounds/bound_problem.h"
#include "bounds/bound_view.h"
#include "model/simulator.h"

namespace optpipe {

struct NodeTransfers {
  double now = 0;                     // the node's time: a transfer not started starts no earlier
  std::vector<double> level;          // [sj]: offload level of F(s, j) once listed; NaN before
  std::vector<double> offload_start, offload_end;  // [sj]: of a started offload; NaN otherwise
  std::vector<double> reload_start, reload_end;    // [sj]: of a started reload; NaN otherwise
  std::vector<double> d2h_free, h2d_free;          // [g]: a transfer not started on the channel starts no earlier
};

// The transfers as plain pointers into `t` (OPTPIPE_HD cores).
inline NodeTransfersView view_of(const NodeTransfers& t) {
  NodeTransfersView v;
  v.now = t.now;
  v.level = t.level.data();
  v.offload_start = t.offload_start.data();
  v.offload_end = t.offload_end.data();
  v.reload_start = t.reload_start.data();
  v.reload_end = t.reload_end.data();
  v.d2h_free = t.d2h_free.data();
  v.h2d_free = t.h2d_free.data();
  return v;
}

// The node at simulator state `state`, decision time `time`.
void fill_node_transfers(const BoundProblem& problem, const Simulator::Snapshot& state, double time, NodeTransfers& out);

}  // namespace optpipe
