// One point of the memory-time frontier (frontier.h) and the rule that keeps the frontier
// monotone: more memory never gives a worse makespan.
//
// A schedule that runs under a limit L also runs on GPUs with more memory L' > L if memory is
// capped at L (e.g. PyTorch's per-process memory fraction), with the same makespan. Spec §4's
// simulator, run at L', may time the same lists differently: with offload an addition can start
// earlier and take memory another one waited for (without offload the times can only move
// earlier). The sweep passes every lower point's schedule to the next solve as a warm start, so
// the solver starts from it as simulated at L'; only when that comes out slower than at L and the
// solver finds nothing as good does carry_from_below() take the lower point's schedule as this
// point's, run with memory capped at its limit (`run_limit`), and say so in `source`.
#pragma once

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "model/schedule.h"

namespace optpipe::frontier {

enum class PointStatus {
  kBelowFloor,  // under the memory floor: no schedule exists (frontier/memory_floor.h)
  kOptimal,     // the makespan is proven optimal at this limit
  kFeasible,    // a schedule, with a proven lower bound
  kNoSchedule,  // the solve found none (stopped before one was found)
};

const char* to_string(PointStatus status);  // "below-floor", "optimal", "feasible", "no-schedule"

struct FrontierPoint {
  double limit = 0;      // bytes, on every device
  PointStatus status = PointStatus::kNoSchedule;
  std::optional<Schedule> schedule;  // with makespan, peak_memory, status, bound, gap
  double makespan = std::numeric_limits<double>::infinity();  // ms
  double bound = 0;      // ms: proven lower bound on the makespan at this limit
  double gap = std::numeric_limits<double>::infinity();
  double run_limit = 0;  // bytes: the limit the schedule runs under with this makespan (<= limit)
  std::string source;    // where the schedule came from (the solve's best_from(), or "carried from ...")
  std::string note;      // below the floor, no schedule: why
  double seconds = 0;    // wall time of its solve

  bool has_schedule() const { return schedule.has_value(); }
};

// The relative tolerance of makespan comparisons (1e-9 of the makespan).
bool faster(double a, double b);

// If a point below points[k] has a faster schedule (the nearest one with a schedule: after
// earlier calls it is the fastest below), points[k] takes it as described above, with its
// bound kept (and capped at the makespan). Returns whether it did. O(k).
bool carry_from_below(std::vector<FrontierPoint>& points, std::size_t k);

}  // namespace optpipe::frontier
