// The MLP stage on a GPU (mlp_model.h for the model, its buffers and their layouts, which are
// the same): cuBLAS GEMMs (cublasSgemm / cublasDgemm) and small CUDA kernels for the bias, tanh
// and its derivative, the loss and the optimizer step, all on the one cudaStream_t given at
// construction. Every pointer handed to forward / backward_input / backward_weight / loss_of is
// device memory. Cost per F, B and W: O(rows * width^2 * layers_per_stage) GPU work.
//
// This header includes no CUDA header. The stage runs in the CUDA plugin (plugins/cuda_plugin.h,
// mlp_model_cuda.cu built by nvcc into liboptpipe_cuda.so); these functions load it on first
// need (mlp_model_cuda_via_plugin.cc) and throw std::runtime_error with the reason when it cannot
// be loaded.
#pragma once

#include <cstddef>
#include <memory>

#include "runtime/mlp_model.h"

namespace optpipe::runtime {

// `cuda_stream` is a cudaStream_t (nullptr: the legacy default stream), used by every op of the
// stage; the caller keeps it alive for the stage's lifetime. Ops are asynchronous on the
// stream, except begin_iteration, loss_of, parameters, gradients and set_parameters, which
// synchronize it. Runs on the device current at construction. Throws std::runtime_error naming
// the CUDA or cuBLAS call that failed.
std::unique_ptr<StageModel> make_mlp_stage_cuda(const MlpConfig& config, int stage, void* cuda_stream);

// Device memory of `bytes` bytes (cudaMalloc; freed with cudaFree when the last owner goes), for
// the reference loop (reference_iteration's allocator) and tests without CUDA headers. Null for
// 0 bytes.
std::shared_ptr<void> mlp_cuda_alloc(std::size_t bytes);

}  // namespace optpipe::runtime
