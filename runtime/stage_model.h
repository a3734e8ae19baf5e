// What a training job gives the executor (issue 7): one StageModel per pipeline stage, and
// what it needs to know of it. The executor owns every buffer -- the input F reads (received
// from the previous stage), the output F writes (sent to the next), what F keeps for B, what B
// keeps for W, the gradients passed back -- and decides where they live (the device's tracked
// arena, or host memory after an offload) and when each op runs. The model only computes on the
// pointers it is given, so the same model runs under every schedule and every backend.
//
// Conventions, per microbatch:
//   - stage 0's forward ignores `input` (it makes its own batch from the data for this
//     iteration and microbatch); the last stage's forward writes the microbatch's loss (one
//     element of the model's dtype) to `output`, and its backward_input ignores `grad_output`
//     (it starts from d loss / d output, with the target it kept in `keep_b`);
//   - backward_input writes grad_input (input_bytes; ignored for stage 0) and fills keep_w;
//     backward_weight accumulates the weight gradients from keep_w; an unsplit backward is
//     backward_input then backward_weight at once;
//   - the loss of an iteration is the mean of its microbatches' losses, and the gradients are
//     of that mean, so they do not depend on the order in which microbatches run.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace optpipe::runtime {

enum class DType { kFloat32, kFloat64 };

inline std::size_t dtype_bytes(DType t) { return t == DType::kFloat32 ? 4 : 8; }

// Bytes per microbatch of the buffers of one stage.
struct StageShapes {
  std::size_t input_bytes = 0;   // what F reads: the previous stage's output (0 for stage 0)
  std::size_t output_bytes = 0;  // what F writes: the next stage's input (the loss for the last)
  std::size_t keep_for_b = 0;    // what F keeps until B (the spec's activation, M_B)
  std::size_t keep_for_w = 0;    // what B keeps until W (M_W <= M_B)
};

class StageModel {
 public:
  virtual ~StageModel() = default;
  virtual StageShapes shapes() const = 0;
  virtual DType dtype() const = 0;

  // Zeroes the gradients; the data of `iteration` (synthetic, deterministic in the seed, the
  // iteration and the microbatch) is what the next forwards and backwards use.
  virtual void begin_iteration(int iteration) = 0;
  virtual void forward(int microbatch, const void* input, void* output, void* keep_b) = 0;
  virtual void backward_input(int microbatch, const void* keep_b, const void* grad_output, void* grad_input,
                              void* keep_w) = 0;
  virtual void backward_weight(int microbatch, const void* keep_w) = 0;
  // The optimizer step with the accumulated gradients (after every W of the iteration).
  virtual void end_iteration() = 0;

  // For the last stage: the loss that forward wrote to `output`.
  virtual double loss_of(const void* output) const = 0;
  // The stage's parameters and accumulated gradients, flattened, as doubles (for tests and
  // checksums).
  virtual std::vector<double> parameters() const = 0;
  virtual std::vector<double> gradients() const = 0;
};

}  // namespace optpipe::runtime
