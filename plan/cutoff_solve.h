// A solve of the solve pipeline (solve/solve_pipeline.h) that gives up once it cannot win: when
// its proven lower bound (the root bound, then the search's) reaches `cutoff`, the schedule it
// has is returned as it is. The plan's runner passes the best time per batch found so far, less
// the option's least data-parallel synchronisation, so a solve stops as soon as its option is
// proven unable to beat the best (the same rule as the cut by the cheap bound, with the solve's
// better bound). The caller's stop flag is forwarded to the solve within 20 ms.
// Cost: the solve's, at most its time limit.
#pragma once

#include <atomic>
#include <limits>

#include "model/instance.h"
#include "solve/solve_pipeline.h"

namespace optpipe::plan {

struct CutoffResult {
  PipelineResult pipeline;
  bool cut = false;  // stopped because the bound reached the cutoff
};

// `options.stop` is the caller's flag (may be null); the solve runs with a flag of its own.
CutoffResult solve_with_cutoff(const Instance& instance, PipelineOptions options,
                               double cutoff = std::numeric_limits<double>::infinity());

}  // namespace optpipe::plan
