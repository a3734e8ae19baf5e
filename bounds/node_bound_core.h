// The whole node bound from a node's times (host and device, hd.h), shared by every backend of
// batched_bounds.h: the heads (compute_heads_core), then max(critical path, one machine,
// channel, memory energy) -- the value of node_bound() (node_bound.h, the search's scalar path)
// for a node it does not cut. node_bound() stops early once max(critical path, one machine)
// reaches the cutoff, which only skips work on a node that is cut anyway; the batch computes all
// four parts.
#pragma once

#include "bounds/bound_view.h"
#include "bounds/channel_bound_core.h"
#include "bounds/critical_path_bound.h"
#include "bounds/hd.h"
#include "bounds/heads_core.h"
#include "bounds/memory_energy_bound_core.h"
#include "bounds/one_machine_bound.h"

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

// The node's bound in three phases, so that a batch can run the one-machine part with one
// thread per (node, device) and take the maximum over devices as a segmented reduction
// (batched_bounds_impl.h); node_bound_from_times_core runs them in a row. Every phase is the
// scalar path's code, and max is exact, so the phased bound equals the scalar one bit for bit.
//
// Phase 1 (per node): the heads (compute_heads_core) into `head` and `finish` [op], the
// offload and reload lower bounds into `scratch`, and the critical path and channel parts.
// `jobs`, `heap`: channel_scratch_jobs(p) entries (not used after the phase).
OPTPIPE_HD inline void node_bound_phase1_core(const BoundProblemView& p, const double* end, const double* device_free,
                                              double makespan_so_far, const NodeTransfersView* nt, double* head,
                                              double* finish, double* scratch, OneMachineJob* jobs, JacksonEntry* heap,
                                              double* cp, double* ch) {
  const int sm = p.S * p.m;
  double* offload_lb = scratch;
  double* reload_lb = scratch + sm;
  double* heads_scratch = scratch + 2 * sm;
  compute_heads_core(p, end, device_free, nt, head, finish, offload_lb, reload_lb, heads_scratch);
  *cp = critical_path_core(p, makespan_so_far, finish);
  *ch = nt ? channel_bound_core(p, *nt, finish, reload_lb, jobs, heap) : 0.0;
}

// Phase 2 (per node and device): one_machine_device_core (bounds/one_machine_bound.h);
// the node's one-machine part is the maximum over its devices.

// Phase 3 (per node): the memory energy part, given the other three, and the whole bound.
// `scratch` as phase 1 left it.
OPTPIPE_HD inline double node_bound_phase3_core(const BoundProblemView& p, const double* end, const double* device_free,
                                                const NodeTransfersView* nt, const double* head, const double* finish,
                                                double* scratch, double cp, double om, double ch) {
  const int sm = p.S * p.m;
  const double* offload_lb = scratch;
  double* energy_scratch = scratch + 2 * sm + heads_scratch_doubles(p);
  const double enough = hd::max(hd::max(cp, om), ch);
  const double me =
      memory_energy_bound_core(p, end, device_free, nt, head, finish, nt ? offload_lb : nullptr, enough, energy_scratch);
  return hd::max(enough, me);
}

// The node's bound. `end` [op], `device_free` [d], `makespan_so_far`: its times; `nt` (null:
// none, then the channel part is 0 and the heads are static) its transfers. `head`, `finish`
// [op]: written. `scratch`: node_bound_scratch_doubles(p); `jobs`, `heap`:
// node_bound_scratch_jobs(p, the most ops of one device) entries.
OPTPIPE_HD inline double node_bound_from_times_core(const BoundProblemView& p, const double* end,
                                                    const double* device_free, double makespan_so_far,
                                                    const NodeTransfersView* nt, double* head, double* finish,
                                                    double* scratch, OneMachineJob* jobs, JacksonEntry* heap) {
  double cp = 0, ch = 0;
  node_bound_phase1_core(p, end, device_free, makespan_so_far, nt, head, finish, scratch, jobs, heap, &cp, &ch);
  const double om = one_machine_core(p, head, jobs, heap);
  return node_bound_phase3_core(p, end, device_free, nt, head, finish, scratch, cp, om, ch);
}

}  // namespace optpipe
