// make_cuda_bounds (batched_bounds.h) in the core: the evaluator comes from the CUDA plugin
// (batched_bounds_cuda.cu inside liboptpipe_cuda.so), loaded on first need.
#include <stdexcept>
#include <string>

#include "kernels/batched_bounds.h"
#include "plugins/cuda_plugin.h"
#include "plugins/plugin_loader.h"

namespace optpipe {

std::unique_ptr<BatchedBounds> make_cuda_bounds(const BoundProblem& problem, int capacity) {
  std::string why;
  const CudaPluginV1* plugin = cuda_plugin(&why);
  if (!plugin) throw std::runtime_error("--bounds gpu: " + why);
  return plugin->make_bounds(problem, capacity);
}

}  // namespace optpipe
