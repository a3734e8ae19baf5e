#include "solve/solve_trace.h"

#include <algorithm>

namespace optpipe {

double seconds_to_gap(const std::vector<TracePoint>& trace, double gap) {
  for (const TracePoint& p : trace) {
    if (p.incumbent < std::numeric_limits<double>::infinity() && (p.incumbent - p.bound) <= gap * p.incumbent + 1e-12) {
      return p.seconds;
    }
  }
  return -1;
}

void SolveTraceRecorder::note(double seconds, double incumbent, double bound, const std::string& source) {
  std::lock_guard<std::mutex> lock(mu_);
  const bool better = incumbent < incumbent_ - 1e-9 || bound > bound_ + 1e-9;
  if (!better) return;
  incumbent_ = std::min(incumbent_, incumbent);
  bound_ = std::max(bound_, std::min(bound, incumbent_));
  points_.push_back({seconds, incumbent_, bound_, source});
}

std::vector<TracePoint> SolveTraceRecorder::points() const {
  std::lock_guard<std::mutex> lock(mu_);
  return points_;
}

}  // namespace optpipe
