// The memory-time frontier (issue 22, part 2): for a range of per-GPU memory limits (the same on
// every device), the best makespan found and its proven lower bound at each, the memory floor
// (frontier/memory_floor.h) and where the classic schedules stop fitting
// (frontier/classic_points.h). `optpipe frontier` prints it (frontier/frontier_report.h) and
// charts it (viz/frontier_svg.h).
//
// The sweep:
//   1. the memory floor and the classic schedules (milliseconds);
//   2. without an upper end given, one solve with no memory limit (memory_limits.h:
//      unconstrained_limit): the upper end is its schedule's peak memory, the least memory at
//      which the best schedule found without a limit runs as it is;
//   3. first pass: the limits of the grid (memory_limits.h: limit_grid) in increasing order, each
//      solved by the solve pipeline (solve/solve_pipeline.h) for a quarter of its equal share of
//      the time left, with every lower point's schedule, the unconstrained schedule and the
//      classic schedules that fit as warm starts. A lower point's schedule runs at every higher
//      limit, so the frontier is monotone; the sweep enforces it (frontier_point.h:
//      carry_from_below). A limit below the floor is reported as such and not solved;
//   4. second pass: the time left -- the larger limits are usually proven within their quarter
//      and hand most of it back -- goes in equal shares to the points not proven optimal, in
//      increasing order, each solved again from its first schedule and every lower one's; the
//      better schedule and the larger bound are kept, and the monotone rule is applied again.
//      (On gpt-8x24-tight with 120 s and 9 limits, the four largest were proven in 3 s of the
//      first pass and the five others got 19 s each in the second, where one pass in equal
//      shares gave each 13 s and left 48 s to the proven ones, which used 5.)
// The time limit covers everything. The stop flag (PipelineOptions::stop, Ctrl-C) ends the
// solve under way with its best schedule; the points after it are not solved and carry the
// schedule below them (bound 0).
//
// Complexity: the floor and classics O(N log N) for N actions; then at most 2 · steps + 1 solves.
//
// Partition points (issue 22, part 1, `optpipe partition`): a later `--partition` adds, at each
// limit, the best partition's point. The hook is FrontierOptions::point_solver: every solve of the
// sweep goes through it, so a partition-aware solver can try other stage splits at each limit.
// Those points then carry their own instance; FrontierPoint has no field for it yet.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "frontier/classic_points.h"
#include "frontier/frontier_point.h"
#include "frontier/memory_floor.h"
#include "model/instance.h"
#include "solve/solve_pipeline.h"

namespace optpipe::frontier {

// One solve of the sweep: the instance with its limit set, the warm starts, its seconds.
struct PointRequest {
  const Instance& instance;  // every device's memory_limit == limit
  double limit = 0;
  std::vector<Schedule> warm_starts;
  double seconds = 0;
};
using PointSolver = std::function<FrontierPoint(const PointRequest&)>;

// The default point solver: solve_pipeline with `base` (its time limit and warm starts replaced
// by the request's); the pipeline's warnings (e.g. the cache's) go to `warn`.
FrontierPoint solve_point(const PointRequest& request, const PipelineOptions& base,
                          const std::function<void(const std::string&)>& warn = {});

struct FrontierOptions {
  std::optional<double> low, high;  // bytes; nullopt: the floor, the unconstrained peak
  int steps = 8;                    // limits in the grid (>= 1)
  double time_limit = 60;           // seconds for everything
  PipelineOptions solve;            // threads, cache, stop, ... (time_limit, warm_starts: per point)
  std::function<void(const std::string&)> progress;  // one line per step (stderr in the CLI)
  PointSolver point_solver;         // empty: solve_point with `solve`
};

struct FrontierResult {
  std::string instance;
  MemoryFloor floor;
  std::vector<ClassicPoint> classics;
  std::optional<FrontierPoint> unconstrained;  // the solve that set the default upper end
  double low = 0, high = 0;                    // the range solved (bytes)
  bool low_default = true, high_default = true;
  int steps = 0;
  std::vector<FrontierPoint> points;           // ascending limits
  int carried = 0;                             // points that took a lower point's schedule
  double time_limit = 0, seconds = 0;
  bool interrupted = false;

  // True when no point with a schedule is slower than one at a lower limit.
  bool monotone() const;
};

// Throws InputError for a request that cannot be met, before solving what it can: steps < 1, a
// negative time limit, a lower end above the upper end, a range entirely below the memory
// floor (naming the device and stage that set it and the shortfall).
FrontierResult compute_frontier(const Instance& instance, const FrontierOptions& options);

}  // namespace optpipe::frontier
