// The CPU MLP stage (mlp_model.h): plain loops over row-major rows x width activations, in the
// model's scalar type T (float or double), summed in a fixed order so that every run is
// bit-for-bit the same. Cost per F, B and W: O(rows * width^2 * layers_per_stage); the
// optimizer step O(width^2 * layers_per_stage).
//
// Backward, derived by hand (back-propagation through a dense layer and an elementwise
// nonlinearity: Goodfellow, Bengio & Courville, Deep Learning, MIT Press 2016, §6.5, algorithms
// 6.3/6.4; the zero-bubble split of B into "input" and "weight" parts: Qi et al., Zero Bubble
// Pipeline Parallelism, ICLR 2024, §2).
//
// One layer on a microbatch, rows r = 1..R, outputs o, inputs i (all of size n = width):
//     z[r][o] = sum_i W[o][i] x[r][i] + b[o],      y[r][o] = tanh(z[r][o])  (or y = z if linear)
// The iteration loss over M microbatches, each of R x n outputs y_hat with targets t:
//     Loss = (1/M) sum_mb l_mb,    l_mb = (1/(R n)) sum_{r,o} (y_hat[r][o] - t[r][o])^2
// so d Loss / d y_hat[r][o] = 2 (y_hat[r][o] - t[r][o]) / (R n M)   (residual, kept in keep_b).
// With g = d Loss / d y for a layer (from the layer above, or grad_output of the next stage):
//     delta[r][o] = d Loss / d z[r][o] = g[r][o] * tanh'(z[r][o]) = g[r][o] (1 - tanh(z[r][o])^2)
//                   (delta = g for the linear last layer)
//     d Loss / d x[r][i] = sum_o delta[r][o] W[o][i]            (B: grad of the layer below)
//     d Loss / d W[o][i] = sum_r delta[r][o] x[r][i]            (W: needs x and delta only)
//     d Loss / d b[o]    = sum_r delta[r][o]
// Hence F keeps per layer x and z (keep_b), B needs them plus g, and writes per layer x and
// delta (keep_w) for W, which accumulates dW += delta^T x and db += sum_r delta over the
// microbatches; the 1/M in delta makes the sum the gradient of the mean loss.
//
// Data: splitmix64 (Steele, Lea & Flood, "Fast splittable pseudorandom number generators",
// OOPSLA 2014) of (seed, stream, a, b, index), Box-Muller for normals; no state, so every
// process computes the same numbers for the same (iteration, microbatch).
#include "runtime/mlp_model.h"

#include <cmath>
#include <cstring>
#include <numbers>
#include <stdexcept>
#include <string>

namespace optpipe::runtime {
namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

enum Stream : std::uint64_t { kInput = 1, kTeacher = 2, kWeight = 3, kBias = 4 };

std::uint64_t key(std::uint64_t seed, Stream stream, std::int64_t a, std::int64_t b, std::int64_t index,
                  std::uint64_t sub) {
  std::uint64_t h = splitmix64(seed);
  h = splitmix64(h ^ static_cast<std::uint64_t>(stream));
  h = splitmix64(h ^ static_cast<std::uint64_t>(a));
  h = splitmix64(h ^ static_cast<std::uint64_t>(b));
  h = splitmix64(h ^ static_cast<std::uint64_t>(index));
  return splitmix64(h ^ sub);
}

// In (0, 1): the top 53 bits, centred in their interval.
double uniform01(std::uint64_t h) { return (static_cast<double>(h >> 11) + 0.5) * 0x1.0p-53; }

double normal(std::uint64_t seed, Stream stream, std::int64_t a, std::int64_t b, std::int64_t index) {
  const double u1 = uniform01(key(seed, stream, a, b, index, 0));
  const double u2 = uniform01(key(seed, stream, a, b, index, 1));
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

std::size_t elems(const MlpConfig& c) { return static_cast<std::size_t>(c.rows) * static_cast<std::size_t>(c.width); }

// Per layer W (width x width) then b (width).
std::size_t layer_params(const MlpConfig& c) {
  const auto w = static_cast<std::size_t>(c.width);
  return w * w + w;
}

// The teacher projection A (n x n, entries N(0, 1/n)): a function of the seed alone.
std::vector<double> teacher_projection(const MlpConfig& c) {
  const auto n = static_cast<std::size_t>(c.width);
  std::vector<double> A(n * n);
  const double scale = 1.0 / std::sqrt(static_cast<double>(n));
  for (std::size_t k = 0; k < A.size(); ++k) A[k] = scale * normal(c.seed, kTeacher, 0, 0, static_cast<std::int64_t>(k));
  return A;
}

// t = sin(A x) per row.
std::vector<double> teacher_target(const MlpConfig& c, const std::vector<double>& A, const std::vector<double>& input) {
  const auto n = static_cast<std::size_t>(c.width);
  if (input.size() != elems(c)) throw std::invalid_argument("mlp_target: input of the wrong size");
  std::vector<double> t(input.size());
  for (std::size_t r = 0; r < static_cast<std::size_t>(c.rows); ++r) {
    for (std::size_t o = 0; o < n; ++o) {
      double acc = 0;
      for (std::size_t i = 0; i < n; ++i) acc += A[o * n + i] * input[r * n + i];
      t[r * n + o] = std::sin(acc);
    }
  }
  return t;
}

template <class T>
class MlpStageCpu final : public MlpStage {
 public:
  MlpStageCpu(const MlpConfig& config, int stage)
      : c_(config), stage_(stage), last_(stage == config.stages - 1), n_(static_cast<std::size_t>(config.width)),
        R_(static_cast<std::size_t>(config.rows)), L_(static_cast<std::size_t>(config.layers_per_stage)),
        S_(elems(config)) {
    const std::vector<double> init = mlp_initial_parameters(config, stage);
    params_.assign(init.begin(), init.end());
    grads_.assign(params_.size(), T(0));
    if (c_.optimizer == MlpConfig::kAdam) {
      adam_m_.assign(params_.size(), T(0));
      adam_v_.assign(params_.size(), T(0));
    }
    scratch_.assign(S_, T(0));
    if (last_) teacher_ = teacher_projection(config);
  }

  StageShapes shapes() const override { return mlp_shapes(c_, stage_); }
  DType dtype() const override { return c_.dtype; }

  void begin_iteration(int iteration) override {
    if (iteration < 0) throw std::invalid_argument("MlpStage::begin_iteration: negative iteration");
    iteration_ = iteration;
    std::fill(grads_.begin(), grads_.end(), T(0));
  }

  void forward(int microbatch, const void* input, void* output, void* keep_b) override {
    check_mlp_microbatch(c_, microbatch, "forward");
    check_mlp_forward_buffers(stage_, input, output, keep_b);
    T* kb = static_cast<T*>(keep_b);
    if (stage_ == 0) {
      const std::vector<double> x = mlp_input(c_, iteration_, microbatch);
      for (std::size_t k = 0; k < S_; ++k) kb[k] = static_cast<T>(x[k]);
    } else {
      std::memcpy(kb, input, S_ * sizeof(T));
    }
    for (std::size_t l = 0; l < L_; ++l) {
      const T* x = kb + 2 * l * S_;
      T* z = kb + (2 * l + 1) * S_;
      const T* W = params_.data() + l * layer_params(c_);
      const T* b = W + n_ * n_;
      for (std::size_t r = 0; r < R_; ++r) {
        for (std::size_t o = 0; o < n_; ++o) {
          T acc = T(0);
          for (std::size_t i = 0; i < n_; ++i) acc += W[o * n_ + i] * x[r * n_ + i];
          z[r * n_ + o] = acc + b[o];
        }
      }
      if (last_ && l + 1 == L_) break;  // the linear output layer
      T* y = l + 1 < L_ ? kb + 2 * (l + 1) * S_ : static_cast<T*>(output);
      for (std::size_t k = 0; k < S_; ++k) y[k] = std::tanh(z[k]);
    }
    if (last_) {
      // z of the last layer is y_hat; keep the residual y_hat - t in its place.
      T* z = kb + (2 * L_ - 1) * S_;
      const std::vector<double> t = teacher_target(c_, teacher_, mlp_input(c_, iteration_, microbatch));
      T sum = T(0);
      for (std::size_t k = 0; k < S_; ++k) {
        z[k] = z[k] - static_cast<T>(t[k]);
        sum += z[k] * z[k];
      }
      *static_cast<T*>(output) = sum / static_cast<T>(S_);
    }
  }

  void backward_input(int microbatch, const void* keep_b, const void* grad_output, void* grad_input,
                      void* keep_w) override {
    check_mlp_microbatch(c_, microbatch, "backward_input");
    check_mlp_backward_input_buffers(stage_, last_, keep_b, grad_output, grad_input, keep_w);
    const T* kb = static_cast<const T*>(keep_b);
    T* kw = static_cast<T*>(keep_w);
    const T residual_scale = static_cast<T>(2.0 / (static_cast<double>(S_) * c_.microbatches));
    for (std::size_t li = L_; li-- > 0;) {
      const T* x = kb + 2 * li * S_;
      const T* z = kb + (2 * li + 1) * S_;
      T* kx = kw + 2 * li * S_;
      T* delta = kw + (2 * li + 1) * S_;
      std::memcpy(kx, x, S_ * sizeof(T));
      if (last_ && li + 1 == L_) {
        for (std::size_t k = 0; k < S_; ++k) delta[k] = residual_scale * z[k];  // z holds the residual
      } else {
        const T* g = li + 1 == L_ ? static_cast<const T*>(grad_output) : scratch_.data();
        for (std::size_t k = 0; k < S_; ++k) {
          const T y = std::tanh(z[k]);
          delta[k] = g[k] * (T(1) - y * y);
        }
      }
      T* gx = li > 0 ? scratch_.data() : stage_ > 0 ? static_cast<T*>(grad_input) : nullptr;
      if (gx == nullptr) continue;
      const T* W = params_.data() + li * layer_params(c_);
      for (std::size_t r = 0; r < R_; ++r) {
        for (std::size_t i = 0; i < n_; ++i) {
          T acc = T(0);
          for (std::size_t o = 0; o < n_; ++o) acc += delta[r * n_ + o] * W[o * n_ + i];
          gx[r * n_ + i] = acc;
        }
      }
    }
  }

  void backward_weight(int microbatch, const void* keep_w) override {
    check_mlp_microbatch(c_, microbatch, "backward_weight");
    check_mlp_backward_weight_buffers(keep_w);
    const T* kw = static_cast<const T*>(keep_w);
    for (std::size_t l = 0; l < L_; ++l) {
      const T* x = kw + 2 * l * S_;
      const T* delta = kw + (2 * l + 1) * S_;
      T* gW = grads_.data() + l * layer_params(c_);
      T* gb = gW + n_ * n_;
      for (std::size_t o = 0; o < n_; ++o) {
        for (std::size_t i = 0; i < n_; ++i) {
          T acc = T(0);
          for (std::size_t r = 0; r < R_; ++r) acc += delta[r * n_ + o] * x[r * n_ + i];
          gW[o * n_ + i] += acc;
        }
        T acc = T(0);
        for (std::size_t r = 0; r < R_; ++r) acc += delta[r * n_ + o];
        gb[o] += acc;
      }
    }
  }

  void end_iteration() override {
    ++step_;
    const double lr = mlp_learning_rate(c_);
    if (c_.optimizer == MlpConfig::kSgd) {
      for (std::size_t k = 0; k < params_.size(); ++k) params_[k] -= static_cast<T>(lr) * grads_[k];
      return;
    }
    const double b1 = c_.adam_beta1, b2 = c_.adam_beta2;
    const double c1 = 1.0 - std::pow(b1, step_), c2 = 1.0 - std::pow(b2, step_);
    for (std::size_t k = 0; k < params_.size(); ++k) {
      const T g = grads_[k];
      adam_m_[k] = static_cast<T>(b1) * adam_m_[k] + static_cast<T>(1.0 - b1) * g;
      adam_v_[k] = static_cast<T>(b2) * adam_v_[k] + static_cast<T>(1.0 - b2) * g * g;
      const double mhat = static_cast<double>(adam_m_[k]) / c1;
      const double vhat = static_cast<double>(adam_v_[k]) / c2;
      params_[k] -= static_cast<T>(lr * mhat / (std::sqrt(vhat) + c_.adam_epsilon));
    }
  }

  double loss_of(const void* output) const override {
    if (!last_) throw std::logic_error("MlpStage::loss_of: only the last stage writes a loss");
    if (output == nullptr) throw std::invalid_argument("MlpStage::loss_of: null output");
    return static_cast<double>(*static_cast<const T*>(output));
  }

  std::vector<double> parameters() const override { return {params_.begin(), params_.end()}; }
  std::vector<double> gradients() const override { return {grads_.begin(), grads_.end()}; }

  void set_parameters(const std::vector<double>& params) override {
    if (params.size() != params_.size()) {
      throw std::invalid_argument("MlpStage::set_parameters: " + std::to_string(params.size()) + " values for " +
                                  std::to_string(params_.size()) + " parameters");
    }
    for (std::size_t k = 0; k < params.size(); ++k) params_[k] = static_cast<T>(params[k]);
  }

 private:
  MlpConfig c_;
  int stage_;
  bool last_;
  std::size_t n_, R_, L_, S_;
  int iteration_ = 0;
  int step_ = 0;
  std::vector<T> params_, grads_, adam_m_, adam_v_, scratch_;
  std::vector<double> teacher_;  // the last stage: the teacher projection A
};

}  // namespace

double mlp_learning_rate(const MlpConfig& c) {
  if (c.learning_rate > 0) return c.learning_rate;
  return c.optimizer == MlpConfig::kAdam ? 0.01 : 0.5;
}

void check_mlp_microbatch(const MlpConfig& c, int microbatch, const char* op) {
  if (microbatch < 0 || microbatch >= c.microbatches) {
    throw std::out_of_range(std::string("MlpStage::") + op + ": microbatch " + std::to_string(microbatch) +
                            " outside [0, " + std::to_string(c.microbatches) + ")");
  }
}

void check_mlp_forward_buffers(int stage, const void* input, const void* output, const void* keep_b) {
  if (output == nullptr || keep_b == nullptr) throw std::invalid_argument("MlpStage::forward: null output or keep_b");
  if (stage > 0 && input == nullptr) throw std::invalid_argument("MlpStage::forward: null input on a stage > 0");
}

void check_mlp_backward_input_buffers(int stage, bool last, const void* keep_b, const void* grad_output,
                                      const void* grad_input, const void* keep_w) {
  if (keep_b == nullptr || keep_w == nullptr) throw std::invalid_argument("MlpStage::backward_input: null keep_b or keep_w");
  if (!last && grad_output == nullptr) throw std::invalid_argument("MlpStage::backward_input: null grad_output");
  if (stage > 0 && grad_input == nullptr) throw std::invalid_argument("MlpStage::backward_input: null grad_input");
}

void check_mlp_backward_weight_buffers(const void* keep_w) {
  if (keep_w == nullptr) throw std::invalid_argument("MlpStage::backward_weight: null keep_w");
}

void validate_mlp_config(const MlpConfig& c) {
  auto bad = [](const std::string& what) { throw std::invalid_argument("MlpConfig: " + what); };
  if (c.stages < 1) bad("stages must be >= 1");
  if (c.layers_per_stage < 1) bad("layers_per_stage must be >= 1");
  if (c.width < 1) bad("width must be >= 1");
  if (c.rows < 1) bad("rows must be >= 1");
  if (c.microbatches < 1) bad("microbatches must be >= 1");
  if (!(c.learning_rate >= 0) || !std::isfinite(c.learning_rate)) bad("learning_rate must be finite and >= 0 (0: the optimizer's default)");
  if (c.optimizer != MlpConfig::kSgd && c.optimizer != MlpConfig::kAdam) bad("unknown optimizer");
  if (c.optimizer == MlpConfig::kAdam &&
      !(c.adam_beta1 >= 0 && c.adam_beta1 < 1 && c.adam_beta2 >= 0 && c.adam_beta2 < 1 && c.adam_epsilon > 0)) {
    bad("Adam needs 0 <= beta1, beta2 < 1 and epsilon > 0");
  }
  if (c.dtype != DType::kFloat32 && c.dtype != DType::kFloat64) bad("unknown dtype");
}

namespace {
void check_stage(const MlpConfig& c, int stage) {
  validate_mlp_config(c);
  if (stage < 0 || stage >= c.stages) {
    throw std::invalid_argument("MLP stage " + std::to_string(stage) + " outside [0, " + std::to_string(c.stages) + ")");
  }
}
}  // namespace

StageShapes mlp_shapes(const MlpConfig& c, int stage) {
  check_stage(c, stage);
  const std::size_t bytes = elems(c) * dtype_bytes(c.dtype);
  StageShapes s;
  s.input_bytes = stage == 0 ? 0 : bytes;
  s.output_bytes = stage == c.stages - 1 ? dtype_bytes(c.dtype) : bytes;
  s.keep_for_b = 2 * static_cast<std::size_t>(c.layers_per_stage) * bytes;
  s.keep_for_w = s.keep_for_b;
  return s;
}

std::unique_ptr<StageModel> make_mlp_stage(const MlpConfig& c, int stage) {
  check_stage(c, stage);
  if (c.dtype == DType::kFloat32) return std::make_unique<MlpStageCpu<float>>(c, stage);
  return std::make_unique<MlpStageCpu<double>>(c, stage);
}

void set_mlp_parameters(StageModel& model, const std::vector<double>& params) {
  auto* mlp = dynamic_cast<MlpStage*>(&model);
  if (mlp == nullptr) throw std::invalid_argument("set_mlp_parameters: not an MLP stage");
  mlp->set_parameters(params);
}

std::vector<double> mlp_input(const MlpConfig& c, int iteration, int microbatch) {
  std::vector<double> x(elems(c));
  for (std::size_t k = 0; k < x.size(); ++k) {
    x[k] = normal(c.seed, kInput, iteration, microbatch, static_cast<std::int64_t>(k));
  }
  return x;
}

std::vector<double> mlp_target(const MlpConfig& c, const std::vector<double>& input) {
  return teacher_target(c, teacher_projection(c), input);
}

std::vector<double> mlp_teacher_projection(const MlpConfig& c) {
  validate_mlp_config(c);
  return teacher_projection(c);
}

std::vector<double> mlp_target(const MlpConfig& c, const std::vector<double>& projection,
                               const std::vector<double>& input) {
  const auto n = static_cast<std::size_t>(c.width);
  if (projection.size() != n * n) throw std::invalid_argument("mlp_target: projection of the wrong size");
  return teacher_target(c, projection, input);
}

std::vector<double> mlp_initial_parameters(const MlpConfig& c, int stage) {
  check_stage(c, stage);
  const auto n = static_cast<std::size_t>(c.width);
  // Glorot uniform (Glorot & Bengio, AISTATS 2010) with the tanh gain 5/3 (as PyTorch's
  // calculate_gain("tanh")): keeps the signal through deep tanh stacks, so that training moves.
  const double glorot = (5.0 / 3.0) * std::sqrt(6.0 / (2.0 * static_cast<double>(n)));
  std::vector<double> p;
  p.reserve(layer_params(c) * static_cast<std::size_t>(c.layers_per_stage));
  for (int l = 0; l < c.layers_per_stage; ++l) {
    for (std::size_t k = 0; k < n * n; ++k) {
      p.push_back(glorot * (2.0 * uniform01(key(c.seed, kWeight, stage, l, static_cast<std::int64_t>(k), 0)) - 1.0));
    }
    for (std::size_t k = 0; k < n; ++k) {
      p.push_back(0.1 * (2.0 * uniform01(key(c.seed, kBias, stage, l, static_cast<std::int64_t>(k), 0)) - 1.0));
    }
  }
  return p;
}

}  // namespace optpipe::runtime
