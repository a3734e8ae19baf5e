// The trace of a solve (solve_pipeline.h): every time the incumbent or the bound improved, when
// (seconds into the solve) and from which phase, so that a caller can tell how long a gap took
// (the benchmark at scale: bench/scale_table.cc). Points come from any thread (heuristics, local
// searches, the search's monitor); the recorder serialises them.
//
// Resolution: the heuristics and local searches are recorded when they finish, the tree search
// from its progress reports (about one a second), so a time to a gap is at most that late.
#pragma once

#include <limits>
#include <mutex>
#include <string>
#include <vector>

namespace optpipe {

struct TracePoint {
  double seconds = 0;
  double incumbent = std::numeric_limits<double>::infinity();  // the best so far, after this point
  double bound = 0;                                              // the best so far, after this point
  std::string source;                                            // what improved it
};

// The first time the gap (incumbent - bound) / incumbent was at most `gap` in a trace; -1: never.
double seconds_to_gap(const std::vector<TracePoint>& trace, double gap);

class SolveTraceRecorder {
 public:
  // Records a point when `incumbent` or `bound` improves on the best so far (infinity / 0:
  // nothing new on that side).
  void note(double seconds, double incumbent, double bound, const std::string& source);
  std::vector<TracePoint> points() const;

 private:
  mutable std::mutex mu_;
  std::vector<TracePoint> points_;
  double incumbent_ = std::numeric_limits<double>::infinity(), bound_ = 0;
};

}  // namespace optpipe
