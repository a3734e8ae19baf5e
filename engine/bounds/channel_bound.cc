#include "engine/bounds/channel_bound.h"

#include <algorithm>

namespace optpipe {

double channel_bound(const BoundProblem& p, const NodeTransfers& nt, const std::vector<double>& finish,
                     const std::vector<double>& reload_lb, std::vector<OneMachineJob>& scratch) {
  double best = 0;
  for (int g = 0; g < p.G; ++g) {
    for (int reload = 0; reload < 2; ++reload) {
      scratch.clear();
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
            scratch.push_back({std::max(floor, finish[p.op(0, s, j)]), r * p.offload_time[s],
                               r * p.reload_time[s] + b_tail});
          } else {
            if (nt.reload_start[sj] == nt.reload_start[sj]) continue;
            // reload_lb = a lower bound on its start + its duration (heads.cc).
            scratch.push_back({std::max(floor, reload_lb[sj] - r * p.reload_time[s]), r * p.reload_time[s], b_tail});
          }
        }
      }
      best = std::max(best, jackson_preemptive_bound(scratch));
    }
  }
  return best;
}

}  // namespace optpipe
