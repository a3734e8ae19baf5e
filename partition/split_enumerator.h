// Every split whose estimated cheap bounds pass (issue 22): a depth-first enumeration of the
// layer counts stage by stage (a branch-and-bound over compositions of the layers), cut where a
// device whose stages are all placed has a memory floor above the limit or a lower bound above
// the cutoff (cheap_bound.h; both only grow as stages are added, so the cut is exact), where a
// stage would get more layers than it can hold alone (stage_floor.h), and where the layers left
// cannot give every later stage its minimum or are more than the later stages can hold. Counts are tried nearest the even
// share first, so good splits come early when the visitor lowers the cutoff.
//
// The estimates sum the profile's unrounded costs (PartitionModel::stage_costs); the instances
// round times to 0.1 us and bytes to MiB, so the cuts allow a tolerance (kBoundSlack per op,
// kFloorSlack per stage) and the caller checks each split's instance exactly.
// Cost: O(nodes x S / D) with nodes <= node_limit; without cuts the splits number
// C(L - 1, S - 1) (46 layers on 16 stages: 3.4e11), hence the limit.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

#include "partition/partition_model.h"

namespace optpipe::partition {

inline constexpr double kBoundSlack = 1e-4;      // ms per op of a device's bound
inline constexpr double kFloorSlack = 2097152.0; // bytes (2 MiB) per stage of a device

struct EnumerateLimits {
  double cutoff = 1e300;                    // ms: skip splits whose estimated bound exceeds it (the visitor may lower it)
  std::int64_t node_limit = 2'000'000;      // partial splits examined
  const std::atomic<bool>* stop = nullptr;
};

struct EnumerateStats {
  std::int64_t nodes = 0;   // partial splits examined
  std::int64_t splits = 0;  // complete splits visited
  bool complete = true;     // false: stopped by the node limit, the stop flag or the visitor
};

// Calls visit(split, estimated bound in ms) for every split that passes; visit returns false to
// stop, and may lower limits.cutoff (e.g. to the best makespan so far).
EnumerateStats enumerate_splits(const PartitionModel& model, EnumerateLimits& limits,
                                const std::function<bool(const std::vector<int>&, double)>& visit);

}  // namespace optpipe::partition
