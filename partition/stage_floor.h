// The memory floor of one stage alone on its device (static + one activation, cheap_bound.h), and
// from it the most layers each stage can hold. A device's floor only grows with its other stages,
// so these are a lower bound on the floor and an upper bound on the layers: the enumeration cuts
// with them (a prefix that leaves more layers than the later stages can hold) and the no-fit
// message states them.
// Cost: least_stage_floor O(L); stage_capacities O(S L^2) at most (it stops at the first count that
// does not fit).
#pragma once

#include <limits>
#include <vector>

#include "partition/partition_model.h"

namespace optpipe::partition {

struct StageFloor {
  double bytes = std::numeric_limits<double>::infinity();  // infinity: no room for that many layers
  double static_bytes = 0, activation = 0;
};

// The least floor of stage s alone with `count` layers, over where its layers may start.
StageFloor least_stage_floor(const PartitionModel& model, int stage, int count);

// For each stage, the most layers it can hold with its floor alone within the limit + `slack`
// bytes (at least its minimum, even when that does not fit).
std::vector<int> stage_capacities(const PartitionModel& model, double slack);

}  // namespace optpipe::partition
