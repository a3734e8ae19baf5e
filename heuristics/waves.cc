#include "heuristics/waves.h"

#include <algorithm>
#include <string>

#include "heuristics/order_utils.h"

namespace optpipe {

Schedule wave_schedule(const Instance& inst, int k, bool offload) {
  Schedule sch = empty_schedule(inst);
  const auto stages = inst.stages_by_device();
  const double level = inst.offload_levels.back();
  auto offloads = [&](int s) { return offload && level > 0 && inst.stages[s].offloadable(); };
  for (int d = 0; d < inst.num_devices(); ++d) {
    auto& list = sch.devices[d];
    for (int first = 0; first < inst.microbatches; first += k) {
      const int last = std::min(inst.microbatches, first + k);
      for (int j = first; j < last; ++j) {
        for (int s : stages[d]) list.push_back(make_f(s, j, offloads(s) ? level : 0.0));
      }
      for (int j = first; j < last; ++j) {
        for (auto it = stages[d].rbegin(); it != stages[d].rend(); ++it) {
          if (offloads(*it)) list.push_back(make_r(*it, j));
          push_backward(list, inst, *it, j);
        }
      }
    }
  }
  return sch;
}

Built Waves::build(const Instance& inst, const RunLimits& limits) const {
  const int m = inst.microbatches;
  std::vector<int> sizes;
  for (int k = 1; k <= std::min(m, 8); ++k) sizes.push_back(k);
  for (int k = 16; k < m; k *= 2) sizes.push_back(k);
  if (m > 8) sizes.push_back(m);
  Simulator sim(inst);
  const SimOptions quiet = SimOptions::quiet();
  std::optional<Schedule> best;
  double best_makespan = 0;
  std::string best_detail;
  int tried = 0;
  for (bool offload : {false, true}) {
    if (offload && !inst.can_offload()) break;
    for (int k : sizes) {
      if (k > 1 && limits.expired()) break;  // one microbatch at a time is always tried: the fallback
      Schedule sch = wave_schedule(inst, k, offload);
      ++tried;
      const SimResult r = sim.run(sch, quiet);
      if (!r.feasible) continue;
      if (!best || r.makespan < best_makespan - kTimeEps) {
        best = std::move(sch);
        best_makespan = r.makespan;
        best_detail = "waves of " + std::to_string(k) + (offload ? ", full offload" : "");
      }
    }
  }
  if (!best) {
    // Even one microbatch at a time (with full offload where allowed) deadlocks for memory:
    // report what it would need, in the usual words.
    Built b = Built::fail(memory_shortfall(title() + " (one microbatch at a time" +
                                               (inst.can_offload() ? ", full offload" : "") + ")",
                                           inst, wave_schedule(inst, 1, inst.can_offload())));
    b.detail = std::to_string(tried) + " wave sizes tried";
    return b;
  }
  return Built::ok(std::move(*best), best_detail + " (" + std::to_string(tried) + " tried)");
}

}  // namespace optpipe
