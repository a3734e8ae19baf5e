// The whole node bound from a node's times (host and device, hd.h), shared by every backend of
// batched_bounds.h: the heads (compute_heads_core), then max(critical path, one machine,
// channel, memory energy) -- the value of the solver's bound() (engine/search/solver.cc) for a
// node it does not cut. bound() stops early once max(critical path, one machine) reaches the
// cutoff, which only skips work on a node that is cut anyway; the batch computes all four parts.
#pragma once

#include "engine/bounds/bound_view.h"
#include "engine/bounds/channel_bound_core.h"
#include "engine/bounds/critical_path_bound.h"
#include "engine/bounds/hd.h"
#include "engine/bounds/heads_core.h"
#include "engine/bounds/memory_energy_bound_core.h"
#include "engine/bounds/one_machine_bound.h"

namespace optpipe {

// Scratch doubles node_bound_from_times_core needs per node: offload and reload lower bounds
// (2·S·m), the heads' scratch and the memory energy's.
OPTPIPE_HD inline int node_bound_scratch_doubles(const BoundProblemView& p) {
  return 2 * p.S * p.m + heads_scratch_doubles(p) + memory_energy_scratch_doubles(p);
}

// Jobs (and heap entries) a node needs: the most ops of one device (`device_ops`) or the
// channel bound's.
OPTPIPE_HD inline int node_bound_scratch_jobs(const BoundProblemView& p, int device_ops) {
  return hd::max(device_ops, channel_scratch_jobs(p));
}

// The node's bound. `end` [op], `device_free` [d], `makespan_so_far`: its times; `nt` (null:
// none, then the channel part is 0 and the heads are static) its transfers. `head`, `finish`
// [op]: written. `scratch`: node_bound_scratch_doubles(p); `jobs`, `heap`:
// node_bound_scratch_jobs(p, the most ops of one device) entries.
OPTPIPE_HD inline double node_bound_from_times_core(const BoundProblemView& p, const double* end,
                                                    const double* device_free, double makespan_so_far,
                                                    const NodeTransfersView* nt, double* head, double* finish,
                                                    double* scratch, OneMachineJob* jobs, JacksonEntry* heap) {
  const int sm = p.S * p.m;
  double* offload_lb = scratch;
  double* reload_lb = scratch + sm;
  double* heads_scratch = scratch + 2 * sm;
  double* energy_scratch = heads_scratch + heads_scratch_doubles(p);
  compute_heads_core(p, end, device_free, nt, head, finish, offload_lb, reload_lb, heads_scratch);
  const double cp = critical_path_core(p, makespan_so_far, finish);
  const double om = one_machine_core(p, head, jobs, heap);
  const double ch = nt ? channel_bound_core(p, *nt, finish, reload_lb, jobs, heap) : 0.0;
  const double enough = hd::max(hd::max(cp, om), ch);
  const double me =
      memory_energy_bound_core(p, end, device_free, nt, head, finish, nt ? offload_lb : nullptr, enough, energy_scratch);
  return hd::max(enough, me);
}

}  // namespace optpipe
