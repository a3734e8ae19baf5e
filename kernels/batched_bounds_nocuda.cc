// make_cuda_bounds for builds without nvcc.
#include <stdexcept>

#include "kernels/batched_bounds.h"

namespace optpipe {

std::unique_ptr<BatchedBounds> make_cuda_bounds(const BoundProblem&, int) {
  throw std::runtime_error("--bounds gpu: this build has no CUDA (nvcc was not found at configure time)");
}

}  // namespace optpipe
