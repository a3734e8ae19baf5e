#include "partition/cheap_bound.h"

#include <algorithm>

namespace optpipe::partition {

double device_lower_bound(double head, double tail, double forward_backward, double weight, int m) {
  return head + m * forward_backward + std::max(m * weight, tail);
}

double activation_floor(const std::vector<double>& activations, const std::vector<double>& keep) {
  double held = 0, floor = 0;
  for (std::size_t k = 0; k < activations.size(); ++k) {
    floor = std::max(floor, held + activations[k]);
    held += keep[k] * activations[k];
  }
  return floor;
}

CheapBound cheap_bound(const Instance& inst) {
  const int S = inst.num_stages(), D = inst.num_devices(), m = inst.microbatches;
  std::vector<double> head(S, 0.0), tail(S, 0.0);
  for (int s = 1; s < S; ++s) {
    head[s] = head[s - 1] + inst.stages[s - 1].forward + inst.comm_after(s - 1);
    tail[s] = tail[s - 1] + inst.comm_after(s - 1) + inst.duration(OpType::B, s - 1);
  }
  const double w0 = inst.split_backward && S > 0 ? inst.stages[0].weight : 0.0;
  std::vector<int> first(D, -1);
  std::vector<double> fb(D, 0.0), w(D, 0.0);
  for (int s = 0; s < S; ++s) {
    const int d = inst.stages[s].device;
    if (first[d] < 0) first[d] = s;
    fb[d] += inst.stages[s].forward + inst.duration(OpType::B, s);
    w[d] += inst.split_backward ? inst.stages[s].weight : 0.0;
  }
  CheapBound best;
  for (int d = 0; d < D; ++d) {
    if (first[d] < 0) continue;
    const double t = tail[first[d]] + (first[d] > 0 ? w0 : 0.0);
    const double lb = device_lower_bound(head[first[d]], t, fb[d], w[d], m);
    if (best.device < 0 || lb > best.value) {
      best.value = lb;
      best.device = d;
      best.work = m * (fb[d] + w[d]);
      best.fill = lb - best.work;
    }
  }
  return best;
}

std::vector<MemoryFloor> memory_floors(const Instance& inst) {
  double top = 0;
  for (double r : inst.offload_levels) top = std::max(top, r);
  std::vector<MemoryFloor> floors;
  const auto by_device = inst.stages_by_device();
  for (int d = 0; d < inst.num_devices(); ++d) {
    std::vector<double> acts, keep;
    for (int s : by_device[d]) {
      acts.push_back(inst.stages[s].activation);
      keep.push_back(inst.stages[s].offloadable() ? 1.0 - top : 1.0);
    }
    MemoryFloor f;
    f.device = d;
    f.static_bytes = inst.devices[d].static_memory;
    f.activations = activation_floor(acts, keep);
    f.bytes = f.static_bytes + f.activations;
    f.limit = inst.devices[d].memory_limit;
    floors.push_back(f);
  }
  return floors;
}

const MemoryFloor& tightest(const std::vector<MemoryFloor>& floors) {
  return *std::max_element(floors.begin(), floors.end(), [](const MemoryFloor& a, const MemoryFloor& b) {
    return a.bytes - a.limit < b.bytes - b.limit;
  });
}

}  // namespace optpipe::partition
