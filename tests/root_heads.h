// The heads [op] at the root of the search, as the solver computes them (the bounds' tests).
#pragma once

#include <vector>

#include "bounds/bound_problem.h"
#include "bounds/heads.h"
#include "model/instance.h"

namespace optpipe::test_support {

using optpipe::root_heads;  // bounds/heads.h

}  // namespace optpipe::test_support
