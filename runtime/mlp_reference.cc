// The single-process reference iteration (mlp_reference.h): every F, then every B, then every
// W, with buffers from an allocator. Cost: one F, B and W per stage and microbatch, so
// O(microbatches * stages * rows * width^2 * layers_per_stage) for the MLP.
#include "runtime/mlp_reference.h"

#include <stdexcept>
#include <string>

namespace optpipe::runtime {

std::shared_ptr<void> host_buffer(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  // double elements: aligned for both dtypes.
  auto* p = new double[(bytes + sizeof(double) - 1) / sizeof(double)]();
  return std::shared_ptr<void>(p, [](void* q) { delete[] static_cast<double*>(q); });
}

ReferenceIteration reference_iteration(std::vector<std::unique_ptr<StageModel>>& stages, int iteration,
                                       int microbatches, const BufferAllocator& allocate) {
  if (stages.empty()) throw std::invalid_argument("reference_iteration: no stages");
  if (microbatches < 1) throw std::invalid_argument("reference_iteration: microbatches must be >= 1");
  const std::size_t n = stages.size();
  const auto m = static_cast<std::size_t>(microbatches);
  for (auto& s : stages) s->begin_iteration(iteration);

  // Per stage and microbatch: F's output (= the next stage's input), what F keeps for B, what B
  // keeps for W, and B's grad_input (= the previous stage's grad_output).
  std::vector<std::vector<std::shared_ptr<void>>> out(n), keep_b(n), keep_w(n), grad_in(n);
  for (std::size_t s = 0; s < n; ++s) {
    const StageShapes sh = stages[s]->shapes();
    if (s + 1 < n && sh.output_bytes != stages[s + 1]->shapes().input_bytes) {
      throw std::invalid_argument("reference_iteration: stage " + std::to_string(s) + " writes " +
                                  std::to_string(sh.output_bytes) + " bytes, stage " + std::to_string(s + 1) +
                                  " reads " + std::to_string(stages[s + 1]->shapes().input_bytes));
    }
    for (std::size_t mb = 0; mb < m; ++mb) {
      out[s].push_back(allocate(sh.output_bytes));
      keep_b[s].push_back(allocate(sh.keep_for_b));
      keep_w[s].push_back(allocate(sh.keep_for_w));
      grad_in[s].push_back(allocate(sh.input_bytes));
    }
  }

  for (std::size_t mb = 0; mb < m; ++mb) {
    for (std::size_t s = 0; s < n; ++s) {
      const void* in = s == 0 ? nullptr : out[s - 1][mb].get();
      stages[s]->forward(static_cast<int>(mb), in, out[s][mb].get(), keep_b[s][mb].get());
    }
  }
  for (std::size_t mb = 0; mb < m; ++mb) {
    for (std::size_t s = n; s-- > 0;) {
      const void* grad_out = s + 1 == n ? nullptr : grad_in[s + 1][mb].get();
      stages[s]->backward_input(static_cast<int>(mb), keep_b[s][mb].get(), grad_out, grad_in[s][mb].get(),
                                keep_w[s][mb].get());
    }
  }
  for (std::size_t mb = 0; mb < m; ++mb) {
    for (std::size_t s = 0; s < n; ++s) stages[s]->backward_weight(static_cast<int>(mb), keep_w[s][mb].get());
  }

  ReferenceIteration r;
  for (std::size_t mb = 0; mb < m; ++mb) r.loss += stages.back()->loss_of(out[n - 1][mb].get());
  r.loss /= static_cast<double>(m);
  for (auto& s : stages) r.gradients.push_back(s->gradients());
  return r;
}

void reference_step(std::vector<std::unique_ptr<StageModel>>& stages) {
  for (auto& s : stages) s->end_iteration();
}

std::vector<std::unique_ptr<StageModel>> make_mlp_stages(const MlpConfig& config) {
  validate_mlp_config(config);
  std::vector<std::unique_ptr<StageModel>> stages;
  for (int s = 0; s < config.stages; ++s) stages.push_back(make_mlp_stage(config, s));
  return stages;
}

std::vector<double> reference_train(const MlpConfig& config, int iterations) {
  if (iterations < 0) throw std::invalid_argument("reference_train: negative iterations");
  auto stages = make_mlp_stages(config);
  std::vector<double> losses;
  for (int it = 0; it < iterations; ++it) {
    losses.push_back(reference_iteration(stages, it, config.microbatches).loss);
    reference_step(stages);
  }
  return losses;
}

}  // namespace optpipe::runtime
