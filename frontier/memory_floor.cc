#include "frontier/memory_floor.h"

#include <algorithm>

#include "heuristics/waves.h"
#include "model/bytes.h"
#include "model/simulator.h"
#include "frontier/memory_limits.h"

namespace optpipe::frontier {
namespace {

// The part of stage s's activation that stays on the GPU at the highest offload level.
double held_part(const Instance& inst, int s) {
  const Stage& st = inst.stages[s];
  const double r = inst.can_offload() && st.offloadable() ? inst.offload_levels.back() : 0.0;
  return (1.0 - r) * st.activation;
}

// The bound of the header for every device, and which device and stage give the largest.
MemoryFloor lower_bound(const Instance& inst) {
  MemoryFloor f;
  const auto stages = inst.stages_by_device();
  f.per_device.assign(stages.size(), 0.0);
  for (std::size_t d = 0; d < stages.size(); ++d) {
    const double base = inst.devices[d].static_memory;
    double held = 0;
    f.per_device[d] = base;
    for (int s : stages[d]) {  // ascending: `held` is what the lower stages keep
      const double need = base + inst.stages[s].activation + held;
      if (need > f.per_device[d]) f.per_device[d] = need;
      if (f.device < 0 || need > f.lower) {
        f.lower = need;
        f.device = static_cast<int>(d);
        f.stage = s;
        f.static_memory = base;
        f.activation = inst.stages[s].activation;
        f.held = held;
      }
      held += held_part(inst, s);
    }
  }
  return f;
}

}  // namespace

MemoryFloor memory_floor(const Instance& instance) {
  MemoryFloor f = lower_bound(instance);
  const bool offload = instance.can_offload();
  const Schedule waves = wave_schedule(instance, 1, offload);
  const std::string name = std::string("waves of 1 microbatch") + (offload ? ", full offload" : "");
  if (simulate(with_memory_limit(instance, f.lower), waves, SimOptions::quiet()).feasible) {
    f.limit = f.lower;
    f.proven = true;
    f.witness = name;
    return f;
  }
  // Not expected (see the header): the waves' peak when nothing waits, where they fit as they are.
  const SimResult free_run = simulate(instance, waves, SimOptions::quiet(false));
  f.limit = std::max(f.lower, *std::max_element(free_run.peak_memory.begin(), free_run.peak_memory.end()));
  f.witness = name + " (its peak; the floor is proven only down to " + format_bytes(f.lower) + ")";
  return f;
}

std::string MemoryFloor::explain() const {
  std::string out = "device " + std::to_string(device) + " (stage " + std::to_string(stage) + "): static " +
                    format_bytes(static_memory) + " + stage " + std::to_string(stage) + "'s activation " +
                    format_bytes(activation);
  if (held > 0) out += " + " + format_bytes(held) + " that the device's lower stages cannot offload";
  return out + " = " + format_bytes(lower);
}

}  // namespace optpipe::frontier
