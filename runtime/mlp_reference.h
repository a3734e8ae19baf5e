// The single-process reference for the executor's tests (issue 7): one training iteration of a
// pipeline's stages run one after the other with plain local buffers, no executor, no schedule.
// Every F (microbatch 0..m-1, stages in model order), then every B (microbatch 0..m-1, last stage
// first), then every W. The executor's result under any schedule must equal this one (double:
// up to rounding, since only the order of the gradient sums changes).
// Cost: m times one F, B and W per stage, O(m * stages * rows * width^2 * layers) for the MLP.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "runtime/mlp_model.h"
#include "runtime/stage_model.h"

namespace optpipe::runtime {

struct ReferenceIteration {
  double loss = 0;                               // mean of the microbatches' losses
  std::vector<std::vector<double>> gradients;    // per stage, as gradients() returns them
};

// Where the reference's buffers live: host memory (the default) or, for the CUDA model, device
// memory (mlp_cuda_alloc in mlp_model_cuda.h). Returns an owner of at least `bytes` bytes,
// aligned for double; bytes may be 0 (then a null pointer is fine).
using BufferAllocator = std::function<std::shared_ptr<void>(std::size_t bytes)>;
std::shared_ptr<void> host_buffer(std::size_t bytes);

// Calls begin_iteration(iteration) on every stage, then runs the iteration as above; does not
// step the optimizer (reference_step does). `microbatches` must be the models' configured count.
ReferenceIteration reference_iteration(std::vector<std::unique_ptr<StageModel>>& stages, int iteration,
                                       int microbatches, const BufferAllocator& allocate = host_buffer);

// end_iteration() on every stage: the optimizer step.
void reference_step(std::vector<std::unique_ptr<StageModel>>& stages);

// The CPU stages of `config`, one per stage.
std::vector<std::unique_ptr<StageModel>> make_mlp_stages(const MlpConfig& config);

// Trains fresh CPU stages of `config` for `iterations` iterations (iteration indices 0..n-1):
// the loss of every iteration, before its step.
std::vector<double> reference_train(const MlpConfig& config, int iterations);

}  // namespace optpipe::runtime
