// The reports of a solve (solve_pipeline.h) for people and for scripts: a SolveObserver that
// prints each phase as it happens, and a last report once the caller has written its files.
// Two kinds: text (text_reporter.h, a MILP-solver-style log) and JSON lines (json_reporter.h,
// one object per event). Both log warnings through spdlog (stderr).
#pragma once

#include <string>

#include "model/instance.h"
#include "model/simulator.h"
#include "solve/solve_observer.h"
#include "solve/solve_pipeline.h"

namespace optpipe {

struct ReportOptions {
  bool quiet = false;    // no header, no progress (text); only the last report (JSON)
  bool verbose = false;  // the search's statistics
};

// What the caller did with the result: the files it wrote ("" : none).
struct WrittenFiles {
  std::string schedule, svg;
  std::string cache;  // the schedule cache file the result went to ("" : no cache)
};

class SolveReporter : public SolveObserver {
 public:
  void on_warning(const std::string& message) override;
  // The last report: the result, its simulation (`sim`, when there is a schedule) and the files.
  virtual void done(const Instance& instance, const PipelineResult& result, const SimResult& sim,
                    const WrittenFiles& files) = 0;
};

}  // namespace optpipe
