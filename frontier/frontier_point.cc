#include "frontier/frontier_point.h"

#include <algorithm>
#include <cmath>

#include "model/bytes.h"

namespace optpipe::frontier {

const char* to_string(PointStatus status) {
  switch (status) {
    case PointStatus::kBelowFloor: return "below-floor";
    case PointStatus::kOptimal: return "optimal";
    case PointStatus::kFeasible: return "feasible";
    case PointStatus::kNoSchedule: return "no-schedule";
  }
  return "?";
}

bool faster(double a, double b) { return a < b - 1e-9 * std::max(1.0, std::abs(b)); }

bool carry_from_below(std::vector<FrontierPoint>& points, std::size_t k) {
  const FrontierPoint* below = nullptr;
  for (std::size_t i = k; i-- > 0;) {
    if (points[i].has_schedule()) {
      below = &points[i];
      break;
    }
  }
  FrontierPoint& p = points[k];
  if (!below || p.status == PointStatus::kBelowFloor) return false;
  if (p.has_schedule() && !faster(below->makespan, p.makespan)) return false;
  p.schedule = below->schedule;
  p.makespan = below->makespan;
  p.run_limit = below->run_limit;
  p.source = "carried from " + format_bytes(below->run_limit) + " (run with memory capped there)";
  p.bound = std::min(p.bound, p.makespan);
  p.gap = p.makespan > 0 ? (p.makespan - p.bound) / p.makespan : 0.0;
  p.status = faster(p.bound, p.makespan) ? PointStatus::kFeasible : PointStatus::kOptimal;
  p.schedule->bound = p.bound;
  p.schedule->gap = p.gap;
  p.schedule->status = to_string(p.status);
  return true;
}

}  // namespace optpipe::frontier
