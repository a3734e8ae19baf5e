// The entry point of liboptpipe_cuda.so (cuda_plugin.h): the table of the plugin's functions,
// compiled into the plugin only. Which parts are in it is decided at configure time
// (plugin_modules/CMakeLists.txt): the device query and the batched bounds always, the cuBLAS MLP with
// the tools, the CUDA/NCCL backend when NCCL was found too.
#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "kernels/batched_bounds.h"
#include "kernels/cuda_devices.h"
#include "plugins/cuda_plugin.h"
#if OPTPIPE_CUDA_PLUGIN_MLP
#include "runtime/mlp_model_cuda.h"
#endif
#if OPTPIPE_CUDA_PLUGIN_NCCL
#include <nccl.h>

#include "runtime/cuda_backend.h"
#endif

namespace {

std::string describe() {
  std::string d = "CUDA runtime " + std::to_string(CUDART_VERSION / 1000) + "." +
                  std::to_string(CUDART_VERSION % 1000 / 10) + ", sm_" OPTPIPE_PLUGIN_STRINGIFY(OPTPIPE_CUDA_ARCHITECTURES);
#if OPTPIPE_CUDA_PLUGIN_MLP
  d += ", cuBLAS MLP";
#endif
#if OPTPIPE_CUDA_PLUGIN_NCCL
  d += ", NCCL " + std::to_string(NCCL_MAJOR) + "." + std::to_string(NCCL_MINOR) + "." + std::to_string(NCCL_PATCH);
#endif
  return d;
}

}  // namespace

extern "C" const optpipe::CudaPluginV1* optpipe_cuda_plugin_v1() {
  static const std::string description = describe();
  static const optpipe::CudaPluginV1 table = {
      optpipe::kCudaPluginVersion,
      OPTPIPE_PLUGIN_ABI,
      description.c_str(),
      &optpipe::cuda_impl::query_devices,
      &optpipe::cuda_impl::make_bounds,
#if OPTPIPE_CUDA_PLUGIN_MLP
      &optpipe::runtime::cuda_impl::make_mlp_stage,
      &optpipe::runtime::cuda_impl::device_alloc,
#else
      nullptr,
      nullptr,
#endif
#if OPTPIPE_CUDA_PLUGIN_NCCL
      &optpipe::runtime::cuda_impl::make_backend,
      &optpipe::runtime::cuda_impl::make_nccl_transport,
#else
      nullptr,
      nullptr,
#endif
  };
  return &table;
}
