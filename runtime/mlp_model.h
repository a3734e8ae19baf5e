// The reference model the executor runs (issue 7): a multilayer perceptron split into pipeline
// stages, behind StageModel (stage_model.h), in double or float, on the CPU. The cuBLAS version
// with the same maths and buffer layouts is in mlp_model_cuda.h.
//
// Model: every stage has `layers_per_stage` dense layers of `width` x `width`; each layer is
// y = tanh(W x + b), except the very last layer of the last stage, which is linear. A microbatch
// is `rows` samples; activations are rows x width, row-major (sample-major). Stage 0 makes its
// own input for (iteration, microbatch) from the seed (counter-based splitmix64 -> normal), and
// the target is a fixed "teacher" of that input, t = sin(A x) with A a random width x width
// projection (entries normal / sqrt(width)) from the seed. The last stage's forward writes the
// microbatch's loss, the mean squared error over its rows x width outputs, to `output`.
//
// Buffers per microbatch (element type = the dtype; S = rows * width elements, L = layers):
//   input      S elements (stage > 0; stage 0 reads none)
//   output     S elements, or 1 element (the loss) for the last stage
//   keep_b     2 L S elements: per layer l = 0..L-1 its input x_l then its pre-activation z_l;
//              for the last stage the last z slot holds the residual y_hat - t instead of z
//   keep_w     2 L S elements: per layer l its input x_l then delta_l = dLoss/dz_l
//   grad_input S elements (stage > 0), grad_output S elements (stage < last)
// so keep_for_w == keep_for_b (<= holds). Gradients are of the mean loss over the configured
// `microbatches`, so backward scales by 1 / microbatches: run exactly that many per iteration.
//
// A stage object runs one op at a time (B uses a scratch buffer of S elements); different
// stages are independent.
//
// Cost of every op (F, B, W): O(rows * width^2 * layers_per_stage) time, plus O(width^2) for
// Adam/SGD per layer at end_iteration.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/stage_model.h"

namespace optpipe::runtime {

struct MlpConfig {
  enum Optimizer { kSgd, kAdam };
  int stages = 2;
  int layers_per_stage = 2;
  int width = 32;
  int rows = 8;          // samples per microbatch
  int microbatches = 4;  // per iteration: the gradient is of the mean loss over these
  DType dtype = DType::kFloat64;
  std::uint64_t seed = 1;
  Optimizer optimizer = kSgd;
  // 0: the optimizer's default, mlp_learning_rate(): SGD 0.5, Adam 0.01 (the loss is a mean
  // over rows x width elements, so SGD wants a large step; both lower the loss of the default
  // model well within 20 iterations for 1..8 stages of 1..4 layers).
  double learning_rate = 0;
  // Adam (Kingma & Ba 2015), standard constants.
  double adam_beta1 = 0.9;
  double adam_beta2 = 0.999;
  double adam_epsilon = 1e-8;
};

// The step size the optimizer uses: learning_rate, or the optimizer's default when it is 0.
double mlp_learning_rate(const MlpConfig& config);

// Throws std::invalid_argument naming the field when a config or a stage index is out of range.
void validate_mlp_config(const MlpConfig& config);

StageShapes mlp_shapes(const MlpConfig& config, int stage);
std::unique_ptr<StageModel> make_mlp_stage(const MlpConfig& config, int stage);

// Overwrites the parameters of an MLP stage (CPU or CUDA) with `params` in the order
// parameters() returns them (per layer W row-major out x in, then b). For finite differences
// and tests; throws std::invalid_argument for another model or a wrong size.
void set_mlp_parameters(StageModel& model, const std::vector<double>& params);

// The deterministic data, shared by the CPU and the CUDA models (computed in double, so both
// dtypes see the same values up to the final rounding): the input of (iteration, microbatch),
// rows x width row-major, and the teacher's target for an input.
std::vector<double> mlp_input(const MlpConfig& config, int iteration, int microbatch);
std::vector<double> mlp_target(const MlpConfig& config, const std::vector<double>& input);
// The same with the teacher's projection A (width x width row-major, mlp_teacher_projection)
// computed once by the caller: O(rows * width^2) instead of O(width^2) normals more per call.
std::vector<double> mlp_teacher_projection(const MlpConfig& config);
std::vector<double> mlp_target(const MlpConfig& config, const std::vector<double>& projection,
                               const std::vector<double>& input);

// The initial parameters of a stage (what parameters() returns before any step): W Glorot
// uniform with the tanh gain 5/3, b uniform in [-0.1, 0.1], from (seed, stage, layer, index).
std::vector<double> mlp_initial_parameters(const MlpConfig& config, int stage);

// The argument checks both MLP stages (CPU and CUDA) make, with the same messages: a microbatch
// outside the configured ones (std::out_of_range naming `op`), a null buffer the op needs
// (std::invalid_argument).
void check_mlp_microbatch(const MlpConfig& config, int microbatch, const char* op);
void check_mlp_forward_buffers(int stage, const void* input, const void* output, const void* keep_b);
void check_mlp_backward_input_buffers(int stage, bool last, const void* keep_b, const void* grad_output,
                                      const void* grad_input, const void* keep_w);
void check_mlp_backward_weight_buffers(const void* keep_w);

// The interface of both MLP implementations beyond StageModel (set_mlp_parameters uses it).
class MlpStage : public StageModel {
 public:
  virtual void set_parameters(const std::vector<double>& params) = 0;
};

}  // namespace optpipe::runtime
