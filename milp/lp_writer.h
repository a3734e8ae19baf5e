// Writes a milp::Model in CPLEX LP format: a `\` comment header (Model::comments), Minimize,
// Subject To, Bounds, Binaries, End. Read by CBC (`cbc model.lp ...`), HiGHS, SCIP, CPLEX,
// Gurobi. Long rows wrap over several lines. Complexity: O(size of the model).
#pragma once

#include <string>

#include "milp/milp_model.h"

namespace optpipe::milp {

std::string lp_text(const Model& model);

}  // namespace optpipe::milp
