// make_mlp_stage_cuda and mlp_cuda_alloc (mlp_model_cuda.h) in the core: the CUDA plugin's cuBLAS
// stage (mlp_model_cuda.cu inside liboptpipe_cuda.so), loaded on first need.
#include <stdexcept>
#include <string>

#include "plugins/cuda_plugin.h"
#include "plugins/plugin_loader.h"
#include "runtime/mlp_model_cuda.h"

namespace optpipe::runtime {
namespace {

const CudaPluginV1& plugin_with_mlp(const char* what) {
  std::string why;
  const CudaPluginV1* p = cuda_plugin(&why);
  if (!p) throw std::runtime_error(std::string(what) + ": " + why);
  if (!p->make_mlp_stage || !p->device_alloc) {
    throw std::runtime_error(std::string(what) + ": the CUDA plugin " + cuda_plugin_load().path +
                             " was built without the executor's model (OPTPIPE_BUILD_TOOLS was off)");
  }
  return *p;
}

}  // namespace

std::unique_ptr<StageModel> make_mlp_stage_cuda(const MlpConfig& config, int stage, void* cuda_stream) {
  return plugin_with_mlp("make_mlp_stage_cuda").make_mlp_stage(config, stage, cuda_stream);
}

std::shared_ptr<void> mlp_cuda_alloc(std::size_t bytes) {
  return plugin_with_mlp("mlp_cuda_alloc").device_alloc(bytes);
}

}  // namespace optpipe::runtime
