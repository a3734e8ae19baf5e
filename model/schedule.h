// A schedule (spec §3): for every device, the ordered list of its actions.
//
// Besides the lists, a schedule file may carry informational fields (makespan, bubble, peak
// memory, status, bound, gap, solver); readers keep them, and tools recompute what they need.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/action.h"

namespace optpipe {

struct Schedule {
  std::string instance;                        // the instance's name
  std::vector<std::vector<Action>> devices;    // devices[d] = device d's program

  // Informational fields (spec §5); empty/nullopt when not known.
  std::optional<double> makespan, bubble, bound, gap;
  std::vector<double> peak_memory;
  std::string status;  // "optimal", "feasible", "infeasible" or ""
  std::string solver;  // free text, e.g. "heuristic 1F1B"

  int num_devices() const { return static_cast<int>(devices.size()); }
  std::size_t num_actions() const;
  bool has_offload() const;
};

// The file written for an instance that no schedule fits: an empty list per device, status
// "infeasible", and `why` (who says so, and the reason) as the solver note. `optpipe solve` and
// `optpipe schedule` both write it when they prove the instance infeasible.
Schedule infeasible_schedule(const std::string& instance, int num_devices, const std::string& why);

}  // namespace optpipe
