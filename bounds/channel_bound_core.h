// Host and device core (hd.h) of channel_bound (channel_bound.h, which documents the bound):
// plain arrays, the caller's scratch, no allocation. channel_bound (channel_bound.cc) wraps it for
// the scalar search; the batched bounds (kernels/batched_bounds_impl.h) call it per node.
#pragma once

#include "bounds/bound_view.h"
#include "bounds/hd.h"
#include "bounds/one_machine_bound.h"

namespace optpipe {

// Jobs (and heap entries) channel_bound_core needs as scratch: at most one per sj on a channel,
// S·m (at least 1).
OPTPIPE_HD inline int channel_scratch_jobs(const BoundProblemView& p) { return hd::max(1, p.S * p.m); }

// The largest channel bound over the groups' D2H and H2D channels. `finish` [op] and `reload_lb`
// [sj] come from compute_heads_core with the same transfers `nt`. `jobs` and `heap`:
// channel_scratch_jobs(p) entries each.
OPTPIPE_HD inline double channel_bound_core(const BoundProblemView& p, const NodeTransfersView& nt,
                                            const double* finish, const double* reload_lb, OneMachineJob* jobs,
                                            JacksonEntry* heap) {
  double best = 0;
  for (int g = 0; g < p.G; ++g) {
    for (int reload = 0; reload < 2; ++reload) {
      int n = 0;
      const double floor = reload ? nt.h2d_free[g] : nt.d2h_free[g];
      for (int s = 0; s < p.S; ++s) {
        if (p.group_of_device[p.device_of[s]] != g) continue;
        for (int j = 0; j < p.m; ++j) {
          const int sj = s * p.m + j;
          const double r = nt.level[sj];
          if (!(r > 0)) continue;  // not offloaded, or not decided yet (NaN)
          const double b_tail = p.dur[1 * p.S + s] + p.op_tail(1, s, j);
          if (!reload) {
            if (nt.offload_start[sj] == nt.offload_start[sj]) continue;
            jobs[n++] = {hd::max(floor, finish[p.op(0, s, j)]), r * p.offload_time[s], r * p.reload_time[s] + b_tail};
          } else {
            if (nt.reload_start[sj] == nt.reload_start[sj]) continue;
            // reload_lb = a lower bound on its start + its duration (heads_core.h).
            jobs[n++] = {hd::max(floor, reload_lb[sj] - r * p.reload_time[s]), r * p.reload_time[s], b_tail};
          }
        }
      }
      best = hd::max(best, jackson_core(jobs, n, heap));
    }
  }
  return best;
}

}  // namespace optpipe
