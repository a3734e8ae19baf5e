// A schedule file's informational fields (makespan, status, bound) are claims: the simulation
// is what counts. claim_warnings() lists, one line each, the claims the simulation contradicts
// (issue 23: a hand-edited file kept its old makespan); `validate` and `simulate` report them.
#pragma once

#include <string>
#include <vector>

#include "model/schedule.h"
#include "model/simulator.h"

namespace optpipe {

// Empty when the file claims nothing, or nothing the simulation `sim` of `schedule` denies.
std::vector<std::string> claim_warnings(const Schedule& schedule, const SimResult& sim);

}  // namespace optpipe
