// Fitting a cached schedule to a (new) instance: re-simulate it, and repair it when it no
// longer fits memory.
//
// Algorithm:
//   1. The lists must pass check_structure() (model/validator.h) on the instance. Offloads
//      the instance no longer allows (a level not in offload_levels, a stage that cannot
//      offload) are removed with their reloads first; any other structural problem rejects it.
//   2. Simulate (model/simulator.h). Feasible: used as is, with the new makespan.
//   3. Infeasible (a memory deadlock: the costs or limits changed): repair with AdaOffload's
//      offload insertion (heuristics/ada_offload.h, ada_offload_from: keeps the lists' order,
//      adds only the offloads needed to fit, placed by simulation), from the schedule as it is
//      and from the schedule with all its offloads removed; the faster result that validate()
//      accepts wins.
//   4. Otherwise rejected, with the reason.
// Complexity: one simulation, plus two AdaOffload repairs when needed (each at most the number
// of offloadable forwards x levels steps of <= 4 simulations, O(N log N) each).
#pragma once

#include <optional>
#include <string>

#include "model/instance.h"
#include "model/schedule.h"

namespace optpipe::cache {

struct Fitted {
  std::optional<Schedule> schedule;  // valid and feasible on the instance; carries makespan, bubble, peaks
  bool repaired = false;             // step 3 was needed
  double makespan = 0;
  std::string note;                  // what happened, or why it was rejected (one line)
};

Fitted fit_schedule(const Instance& instance, Schedule schedule);

}  // namespace optpipe::cache
