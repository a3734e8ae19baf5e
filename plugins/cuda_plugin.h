// The CUDA plugin, liboptpipe_cuda.so: everything that needs the CUDA runtime, cuBLAS or NCCL,
// outside the core so that `optpipe` starts (and runs on the CPU) where those libraries are not
// installed. The core reaches it through cuda_plugin() (plugin_loader.h) on first need: the
// device query (`optpipe devices`, `--bounds auto`), the batched bounds on the GPU
// (`--bounds gpu`), the cuBLAS MLP stage and the CUDA/NCCL executor backend
// (`train --backend cuda`). The functions the core calls (query_cuda_devices,
// make_cuda_bounds, make_mlp_stage_cuda, make_cuda_backend, ...) keep their headers and
// forward to this table.
//
// The plugin exports one C symbol, optpipe_cuda_plugin_v1, returning a static table. Its
// members are C++ function pointers (plugin_abi.h: the plugin belongs to its build). A member is
// null when the plugin was built without that part (the MLP and the backend need the tools
// build, the backend NCCL too); the core then says so.
//
// Objects made by the plugin (evaluators, stage models, backends, transports) run the plugin's
// code until they are destroyed; the loader never unloads a plugin.
#pragma once

#include <cstddef>
#include <memory>

#include "plugins/plugin_abi.h"

namespace optpipe {

struct CudaDevices;    // kernels/cuda_devices.h
class BatchedBounds;   // kernels/batched_bounds.h
struct BoundProblem;   // bounds/bound_problem.h
namespace runtime {
class StageModel;      // runtime/stage_model.h
struct MlpConfig;      // runtime/mlp_model.h
class DeviceBackend;   // runtime/device_backend.h
class Transport;       // runtime/transport.h
}  // namespace runtime

inline constexpr int kCudaPluginVersion = 1;

struct CudaPluginV1 {
  int version;              // kCudaPluginVersion
  const char* abi;          // OPTPIPE_PLUGIN_ABI of the plugin's build
  const char* description;  // e.g. "CUDA runtime 13.0, sm_90, cuBLAS, NCCL 2.28.3"
  // kernels/cuda_devices.h: never throws (no driver or no device is a status).
  CudaDevices (*query_devices)();
  // kernels/batched_bounds.h, make_cuda_bounds.
  std::unique_ptr<BatchedBounds> (*make_bounds)(const BoundProblem& problem, int capacity);
  // runtime/mlp_model_cuda.h (null without the tools build).
  std::unique_ptr<runtime::StageModel> (*make_mlp_stage)(const runtime::MlpConfig& config, int stage, void* stream);
  std::shared_ptr<void> (*device_alloc)(std::size_t bytes);
  // runtime/cuda_backend.h (null without NCCL). The NCCL transport sends its control messages
  // (bootstrap, gather, broadcast, abort) over `control`, the MPI transport.
  std::unique_ptr<runtime::DeviceBackend> (*make_backend)(int device);
  std::unique_ptr<runtime::Transport> (*make_nccl_transport)(runtime::DeviceBackend& backend,
                                                             std::unique_ptr<runtime::Transport> control, int stages,
                                                             int microbatches);
};

// The implementations inside the plugin (kernels/*.cu, runtime/mlp_model_cuda.cu,
// runtime/cuda_backend.cc); only the plugin's sources call them.
namespace cuda_impl {
CudaDevices query_devices();
std::unique_ptr<BatchedBounds> make_bounds(const BoundProblem& problem, int capacity);
}  // namespace cuda_impl
namespace runtime::cuda_impl {
std::unique_ptr<StageModel> make_mlp_stage(const MlpConfig& config, int stage, void* stream);
std::shared_ptr<void> device_alloc(std::size_t bytes);
std::unique_ptr<DeviceBackend> make_backend(int device);
std::unique_ptr<Transport> make_nccl_transport(DeviceBackend& backend, std::unique_ptr<Transport> control, int stages,
                                               int microbatches);
}  // namespace runtime::cuda_impl

}  // namespace optpipe

extern "C" const optpipe::CudaPluginV1* optpipe_cuda_plugin_v1();
