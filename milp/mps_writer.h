// Writes a milp::Model in free MPS format: `*` comment header, NAME, ROWS (N obj first),
// COLUMNS (binaries between MARKER INTORG / INTEND, each also bounded by UP 1), RHS, BOUNDS,
// ENDATA. Read by CBC, HiGHS, SCIP, CPLEX, Gurobi. Complexity: O(size of the model).
#pragma once

#include <string>

#include "milp/milp_model.h"

namespace optpipe::milp {

std::string mps_text(const Model& model);

}  // namespace optpipe::milp
