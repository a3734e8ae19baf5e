// A build without a CUDA compiler: the CUDA MLP stage's entry points say so (mlp_model_cuda.h).
#include <stdexcept>

#include "runtime/mlp_model_cuda.h"

namespace optpipe::runtime {

std::unique_ptr<StageModel> make_mlp_stage_cuda(const MlpConfig&, int, void*) {
  throw std::runtime_error(
      "make_mlp_stage_cuda: this build has no CUDA support (nvcc was not found when it was configured); "
      "use the CPU backend or rebuild with the CUDA toolkit on PATH");
}

std::shared_ptr<void> mlp_cuda_alloc(std::size_t) {
  throw std::runtime_error("mlp_cuda_alloc: this build has no CUDA support (nvcc was not found when it was configured)");
}

}  // namespace optpipe::runtime
