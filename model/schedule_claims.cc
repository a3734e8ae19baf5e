#include "model/schedule_claims.h"

#include <algorithm>
#include <cmath>

#include "model/time_text.h"

namespace optpipe {

std::vector<std::string> claim_warnings(const Schedule& sch, const SimResult& sim) {
  std::vector<std::string> out;
  if (!sim.feasible) return out;
  const double tolerance = 1e-6 * std::max(1.0, sim.makespan);
  if (sch.makespan && std::abs(*sch.makespan - sim.makespan) > tolerance) {
    out.push_back("the file says makespan " + fmt_ms(*sch.makespan) + ", the simulation gives " + fmt_ms(sim.makespan) +
                  " (the file's field is informational; the simulation counts)");
  }
  if (sch.status == "infeasible") {
    out.push_back("the file says status \"infeasible\", but the schedule fits and runs");
  } else if (sch.status == "optimal" && sch.bound && *sch.bound < sim.makespan - tolerance) {
    out.push_back("the file says status \"optimal\" with bound " + fmt_ms(*sch.bound) + ", below the simulated makespan " +
                  fmt_ms(sim.makespan) + ": not a proof of this schedule");
  }
  return out;
}

}  // namespace optpipe
