// What limits a solved option (issue 22, part 3): the busiest device, memory, PCIe, or the
// data-parallel synchronisation, as one short phrase for the plan's table. Rules, first that
// applies:
//   - PCIe: the schedule offloads and a PCIe channel (one direction of one group) is busy at
//     least half the makespan;
//   - memory: some device's peak leaves less room than one of its largest activations, and the
//     makespan is more than 5% above the instance's cheap bound, which ignores memory
//     (partition/cheap_bound.h): the schedule waits for memory or works around it;
//   - data-parallel sync: it is at least a quarter of the time per global batch;
//   - otherwise the busiest device (its compute over the makespan) and its stages.
// A heuristic reading of one simulation, not a proof. O(N) for N actions and transfers.
#pragma once

#include <string>
#include <vector>

#include "model/instance.h"
#include "model/simulator.h"

namespace optpipe::plan {

struct Bottleneck {
  std::string kind;   // "device", "memory", "pcie", "dp-sync"
  std::string text;   // e.g. "device 0 (stages 0, 15) busy 94%"
};

// `sim` with its timeline; `cheap_bound` the instance's memory-oblivious makespan bound;
// `sync` the per-device synchronisation and `time` the time per global batch, ms.
Bottleneck find_bottleneck(const Instance& instance, const SimResult& sim, double cheap_bound,
                           const std::vector<double>& sync, double time);

}  // namespace optpipe::plan
