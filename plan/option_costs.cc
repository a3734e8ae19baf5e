#include "plan/option_costs.h"

#include <algorithm>
#include <limits>

#include "instances/generator/parallelism.h"

namespace optpipe::plan {

std::vector<double> dp_sync_per_device(const gen::GenerateOptions& o, const gen::Generated& g) {
  const Instance& inst = g.instance;
  std::vector<double> params(inst.num_devices(), 0.0), sync(inst.num_devices(), 0.0);
  for (int s = 0; s < inst.num_stages(); ++s) params[inst.stages[s].device] += g.stages[s].total.params;
  for (int d = 0; d < inst.num_devices(); ++d) {
    sync[d] = gen::dp_sync(params[d], inst.num_devices(), o.model, o.cost, o.gpu).ms;
  }
  return sync;
}

std::vector<double> device_ends(const SimResult& sim) {
  std::vector<double> ends(sim.timeline.size(), 0.0);
  for (std::size_t d = 0; d < sim.timeline.size(); ++d) {
    for (const ActionTiming& t : sim.timeline[d]) {
      if (t.done()) ends[d] = std::max(ends[d], t.end);
    }
  }
  return ends;
}

double time_per_batch(const std::vector<double>& ends, const std::vector<double>& sync) {
  double time = 0;
  for (std::size_t d = 0; d < ends.size(); ++d) time = std::max(time, ends[d] + (d < sync.size() ? sync[d] : 0.0));
  return time;
}

double time_lower_bound(double makespan_bound, const std::vector<double>& sync) {
  return makespan_bound + (sync.empty() ? 0.0 : *std::min_element(sync.begin(), sync.end()));
}

double tokens_per_second(int global_batch, int seq, double time_ms) {
  if (!(time_ms > 0)) return 0.0;
  return double(global_batch) * seq / (time_ms / 1e3);
}

}  // namespace optpipe::plan
