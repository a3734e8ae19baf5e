// make_tbb_bounds for builds without Thrust headers.
#include <stdexcept>

#include "kernels/batched_bounds.h"

namespace optpipe {

std::unique_ptr<BatchedBounds> make_tbb_bounds(const BoundProblem&) {
  throw std::runtime_error("--bounds tbb: this build has no Thrust headers (install the CUDA toolkit or libthrust-dev)");
}

}  // namespace optpipe
