// A brute-force oracle for the optimum of spec §4 (../shared/spec/problem.md), for tests only.
//
// It enumerates every schedule that passes check_structure() (validator.h), except lists that
// deadlock whatever the other devices do (see device_candidate_lists), simulates each one and
// keeps the smallest makespan among those that complete. No bound, no dominance rule, no
// cleverness: the point is to be obviously right, so that the exact solver can be compared with
// it. The count grows very fast; it is meant for 2 devices with 2-3 microbatches.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "model/action.h"
#include "model/instance.h"
#include "model/schedule.h"

namespace optpipe::test_support {

struct BruteForceResult {
  bool feasible = false;                                      // some schedule completes
  double optimum = std::numeric_limits<double>::infinity();   // its smallest makespan
  Schedule best;                                              // one schedule reaching it (first found)
  // The second-smallest makespan (more than 1e-9 ms above the optimum; infinity: none) and a
  // schedule with it: a warm start that the optimum beats by as little as any schedule can.
  double runner_up = std::numeric_limits<double>::infinity();
  Schedule runner_up_schedule;
  std::int64_t schedules_enumerated = 0;                      // schedules simulated
  std::int64_t feasible_count = 0;                            // ... of which completed
  bool aborted = false;  // more than max_schedules schedules: nothing simulated, the rest is meaningless
};

// Calls `visit` with every candidate list of device d, until it returns false. The candidates
// are every list that the per-device rules of spec §3 allow (each op of the device's stages
// exactly once, FIFO per stage and type, every allowed offload level on every F of an
// offloadable stage, R after its F and before its B, R FIFO per stage), minus the lists in which
// an op comes before an op of the same microbatch that it depends on (brute_force.cc explains
// why those always deadlock). Returns how many lists were visited.
std::int64_t for_each_device_list(const Instance& instance, int device,
                                  const std::function<bool(const std::vector<Action>&)>& visit);

// The candidate lists of device d, or fewer than all of them when there are more than `limit`
// (then exactly limit + 1 are returned, so that the caller can tell).
std::vector<std::vector<Action>> device_candidate_lists(
    const Instance& instance, int device, std::int64_t limit = std::numeric_limits<std::int64_t>::max());

// The number of schedules brute_force_optimum() would simulate (the product of the devices'
// candidate counts), or limit + 1 when it exceeds `limit`. Cheap for small counts.
std::int64_t count_schedules(const Instance& instance, std::int64_t limit);

// Simulates the whole cartesian product of the devices' candidate lists (a reused Simulator, no
// recording) and returns the best. When there are more than max_schedules schedules it simulates
// none and returns aborted = true.
BruteForceResult brute_force_optimum(const Instance& instance, std::int64_t max_schedules = 50'000'000);

}  // namespace optpipe::test_support
