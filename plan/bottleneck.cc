#include "plan/bottleneck.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "model/bytes.h"
#include "model/channel_load.h"

namespace optpipe::plan {
namespace {

std::string percent(double share) {
  char b[16];
  std::snprintf(b, sizeof b, "%.0f%%", 100.0 * share);
  return b;
}

// The busiest PCIe channel: its share of the makespan and its words; share 0 without transfers.
std::pair<double, std::string> busiest_pcie(const SimResult& sim) {
  const std::vector<ChannelLoad> loads = channel_loads(sim);
  const ChannelLoad* c = busiest_channel(loads);
  if (!c) return {0.0, ""};
  const double share = c->share(sim.makespan);
  return {share, "PCIe group " + std::to_string(c->group) + (c->reload ? " H2D" : " D2H") + " busy " + percent(share)};
}

std::string stages_of(const Instance& inst, int d) {
  std::string out;
  for (int s = 0; s < inst.num_stages(); ++s) {
    if (inst.stages[s].device == d) out += (out.empty() ? "" : ", ") + std::to_string(s);
  }
  return out;
}

}  // namespace

Bottleneck find_bottleneck(const Instance& inst, const SimResult& sim, double cheap_bound,
                           const std::vector<double>& sync, double time) {
  const auto [pcie_share, pcie_text] = busiest_pcie(sim);
  if (!sim.transfers.empty() && pcie_share >= 0.5) return {"pcie", pcie_text};
  // The device with the least room left at its peak, counted in its largest activations.
  int fullest = -1;
  double least_room = 0;
  for (int d = 0; d < inst.num_devices(); ++d) {
    double largest = 0;
    for (const Stage& st : inst.stages) {
      if (st.device == d) largest = std::max(largest, st.activation);
    }
    const double room = largest > 0 ? (inst.devices[d].memory_limit - sim.peak_memory[d]) / largest : 1e300;
    if (fullest < 0 || room < least_room) least_room = room, fullest = d;
  }
  if (least_room < 1.0 && sim.makespan > 1.05 * cheap_bound) {
    const double fill = sim.peak_memory[fullest] / inst.devices[fullest].memory_limit;
    return {"memory", "memory: device " + std::to_string(fullest) + " at " + percent(fill) + " of " +
                          format_bytes(inst.devices[fullest].memory_limit)};
  }
  const double most_sync = sync.empty() ? 0.0 : *std::max_element(sync.begin(), sync.end());
  if (time > 0 && most_sync >= 0.25 * time) return {"dp-sync", "DP gradient sync " + percent(most_sync / time)};
  int busiest = 0;
  for (int d = 1; d < inst.num_devices(); ++d) {
    if (sim.busy[d] > sim.busy[busiest]) busiest = d;
  }
  const double share = sim.makespan > 0 ? sim.busy[busiest] / sim.makespan : 0.0;
  const std::string stages = stages_of(inst, busiest);
  return {"device", "device " + std::to_string(busiest) + (stages.find(',') == std::string::npos ? " (stage " : " (stages ") +
                        stages + ") busy " + percent(share)};
}

}  // namespace optpipe::plan
