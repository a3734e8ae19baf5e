// The MLP stage on a GPU (mlp_model_cuda.h), inside the CUDA plugin (plugins/cuda_plugin.h;
// make_mlp_stage_cuda in mlp_model_cuda_via_plugin.cc loads it): the CPU model's maths (mlp_model.cc, with the hand
// derivation of the backward after Goodfellow et al., Deep Learning, §6.5) with cuBLAS GEMMs and
// small elementwise kernels on one stream. Cost per F, B and W: 2 L GEMMs of
// O(rows * width^2) plus O(rows * width) elementwise work per layer; the optimizer step
// O(width^2) per layer.
//
// Layouts. The buffers are row-major (rows x width activations, W as out x in), cuBLAS is
// column-major: a row-major R x C matrix is the column-major C x R matrix of its transpose, with
// leading dimension C. With n = width, R = rows and row-major X (R x n), W (n x n), delta (R x n):
//   F:  Z = X W^T        col-major Z^T = (W^T)^T X^T: gemm(T, N, n, R, n, W, X) -> Z
//   B:  G = delta W      col-major G^T = W^T delta^T: gemm(N, N, n, R, n, W, delta) -> G
//   W:  dW += delta^T X  col-major dW^T = X^T delta:  gemm(N, T, n, n, R, X, delta) -> dW, beta 1
// where in each gemm call the column-major views are W^T (n x n), X^T and delta^T (n x R).
//
// Inputs and targets are made on the host (mlp_input / mlp_target, the CPU model's numbers) at
// begin_iteration for all the iteration's microbatches and copied to the device once.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "plugins/cuda_plugin.h"
#include "runtime/mlp_model_cuda.h"

namespace optpipe::runtime {
namespace {

void check(cudaError_t e, const char* call) {
  if (e != cudaSuccess) {
    throw std::runtime_error(std::string(call) + " failed: " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) +
                             ")");
  }
}

void check(cublasStatus_t s, const char* call) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(call) + " failed: " + cublasGetStatusName(s) + " (" +
                             cublasGetStatusString(s) + ")");
  }
}

// After a kernel launch: a bad configuration shows here (errors during the run show at the next
// synchronizing call, which is checked too).
void check_launch(const char* kernel) { check(cudaGetLastError(), kernel); }

cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                    const float* alpha, const float* A, int lda, const float* B, int ldb, const float* beta, float* C,
                    int ldc) {
  return cublasSgemm(h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}
cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                    const double* alpha, const double* A, int lda, const double* B, int ldb, const double* beta,
                    double* C, int ldc) {
  return cublasDgemm(h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}
template <class T>
const char* gemm_name() {
  return sizeof(T) == 4 ? "cublasSgemm" : "cublasDgemm";
}

__device__ inline float dev_tanh(float x) { return tanhf(x); }
__device__ inline double dev_tanh(double x) { return tanh(x); }

constexpr int kThreads = 256;
int blocks_for(std::size_t n) {
  const std::size_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < 4096 ? (b == 0 ? 1 : b) : 4096);
}

// z += b (per column); y = tanh(z) when y is not null.
template <class T>
__global__ void bias_tanh_kernel(const T* b, T* z, T* y, int rows, int n) {
  const std::size_t total = static_cast<std::size_t>(rows) * n;
  for (std::size_t k = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; k < total;
       k += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const T v = z[k] + b[k % n];
    z[k] = v;
    if (y != nullptr) y[k] = dev_tanh(v);
  }
}

// z -= t; *loss = sum z^2 / count. One block; each thread sums a strided slice in order, then a
// fixed tree: deterministic.
template <class T>
__global__ void residual_loss_kernel(T* z, const T* t, T* loss, int count) {
  __shared__ T partial[kThreads];
  T acc = T(0);
  for (int k = threadIdx.x; k < count; k += blockDim.x) {
    const T r = z[k] - t[k];
    z[k] = r;
    acc += r * r;
  }
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (static_cast<int>(threadIdx.x) < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) *loss = partial[0] / static_cast<T>(count);
}

// delta = g * (1 - tanh(z)^2)
template <class T>
__global__ void delta_tanh_kernel(const T* g, const T* z, T* delta, std::size_t count) {
  for (std::size_t k = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; k < count;
       k += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const T y = dev_tanh(z[k]);
    delta[k] = g[k] * (T(1) - y * y);
  }
}

// delta = s * r
template <class T>
__global__ void scale_kernel(const T* r, T* delta, T s, std::size_t count) {
  for (std::size_t k = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; k < count;
       k += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    delta[k] = s * r[k];
  }
}

// gb[o] += sum_r delta[r][o], rows in order.
template <class T>
__global__ void bias_grad_kernel(const T* delta, T* gb, int rows, int n) {
  for (int o = blockIdx.x * blockDim.x + threadIdx.x; o < n; o += gridDim.x * blockDim.x) {
    T acc = T(0);
    for (int r = 0; r < rows; ++r) acc += delta[static_cast<std::size_t>(r) * n + o];
    gb[o] += acc;
  }
}

template <class T>
__global__ void sgd_kernel(T* p, const T* g, T lr, std::size_t count) {
  for (std::size_t k = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; k < count;
       k += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    p[k] -= lr * g[k];
  }
}

// The CPU model's Adam step (mlp_model.cc), element by element.
template <class T>
__global__ void adam_kernel(T* p, const T* g, T* m, T* v, double b1, double b2, double c1, double c2, double lr,
                            double eps, std::size_t count) {
  for (std::size_t k = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; k < count;
       k += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const T gk = g[k];
    m[k] = static_cast<T>(b1) * m[k] + static_cast<T>(1.0 - b1) * gk;
    v[k] = static_cast<T>(b2) * v[k] + static_cast<T>(1.0 - b2) * gk * gk;
    const double mhat = static_cast<double>(m[k]) / c1;
    const double vhat = static_cast<double>(v[k]) / c2;
    p[k] -= static_cast<T>(lr * mhat / (sqrt(vhat) + eps));
  }
}

// An owned device array of T.
template <class T>
class DeviceArray {
 public:
  DeviceArray() = default;
  explicit DeviceArray(std::size_t n) : n_(n) {
    if (n > 0) check(cudaMalloc(reinterpret_cast<void**>(&p_), n * sizeof(T)), "cudaMalloc");
  }
  ~DeviceArray() {
    if (p_ != nullptr) cudaFree(p_);  // no throw from a destructor
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  DeviceArray(DeviceArray&& o) noexcept : p_(o.p_), n_(o.n_) { o.p_ = nullptr, o.n_ = 0; }
  DeviceArray& operator=(DeviceArray&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
    return *this;
  }
  T* get() const { return p_; }
  std::size_t size() const { return n_; }

 private:
  T* p_ = nullptr;
  std::size_t n_ = 0;
};

template <class T>
class MlpStageCuda final : public MlpStage {
 public:
  MlpStageCuda(const MlpConfig& config, int stage, cudaStream_t stream)
      : c_(config), stage_(stage), last_(stage == config.stages - 1), n_(config.width), R_(config.rows),
        L_(config.layers_per_stage), S_(static_cast<std::size_t>(config.rows) * config.width),
        P_(static_cast<std::size_t>(config.layers_per_stage) * (static_cast<std::size_t>(n_) * n_ + n_)),
        stream_(stream) {
    shapes_ = mlp_shapes(config, stage);  // validates the config and the stage
    check(cublasCreate(&handle_), "cublasCreate");
    try {
      check(cublasSetStream(handle_, stream_), "cublasSetStream");
      check(cublasSetPointerMode(handle_, CUBLAS_POINTER_MODE_HOST), "cublasSetPointerMode");
      // Full-precision FP32 (no TF32 tensor-op rounding), like the CPU model.
      check(cublasSetMathMode(handle_, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
      params_ = DeviceArray<T>(P_);
      grads_ = DeviceArray<T>(P_);
      if (c_.optimizer == MlpConfig::kAdam) {
        adam_m_ = DeviceArray<T>(P_);
        adam_v_ = DeviceArray<T>(P_);
        check(cudaMemsetAsync(adam_m_.get(), 0, P_ * sizeof(T), stream_), "cudaMemsetAsync");
        check(cudaMemsetAsync(adam_v_.get(), 0, P_ * sizeof(T), stream_), "cudaMemsetAsync");
      }
      check(cudaMemsetAsync(grads_.get(), 0, P_ * sizeof(T), stream_), "cudaMemsetAsync");
      scratch_ = DeviceArray<T>(S_);
      const auto m = static_cast<std::size_t>(c_.microbatches);
      if (stage_ == 0) inputs_ = DeviceArray<T>(m * S_);
      if (last_) {
        targets_ = DeviceArray<T>(m * S_);
        teacher_ = mlp_teacher_projection(c_);
      }
      set_parameters(mlp_initial_parameters(c_, stage_));
    } catch (...) {
      cublasDestroy(handle_);
      throw;
    }
  }

  ~MlpStageCuda() override {
    cudaStreamSynchronize(stream_);  // no work may still use the arrays freed below
    cublasDestroy(handle_);
  }
  MlpStageCuda(const MlpStageCuda&) = delete;
  MlpStageCuda& operator=(const MlpStageCuda&) = delete;

  StageShapes shapes() const override { return shapes_; }
  DType dtype() const override { return c_.dtype; }

  void begin_iteration(int iteration) override {
    if (iteration < 0) throw std::invalid_argument("MlpStage::begin_iteration: negative iteration");
    check(cudaMemsetAsync(grads_.get(), 0, P_ * sizeof(T), stream_), "cudaMemsetAsync");
    if (stage_ != 0 && !last_) {
      data_ready_ = true;
      return;
    }
    std::vector<T> host_in, host_t;
    for (int mb = 0; mb < c_.microbatches; ++mb) {
      const std::vector<double> x = mlp_input(c_, iteration, mb);
      if (stage_ == 0) host_in.insert(host_in.end(), x.begin(), x.end());
      if (last_) {
        const std::vector<double> t = mlp_target(c_, teacher_, x);
        host_t.insert(host_t.end(), t.begin(), t.end());
      }
    }
    if (stage_ == 0) {
      check(cudaMemcpyAsync(inputs_.get(), host_in.data(), host_in.size() * sizeof(T), cudaMemcpyHostToDevice, stream_),
            "cudaMemcpyAsync");
    }
    if (last_) {
      check(cudaMemcpyAsync(targets_.get(), host_t.data(), host_t.size() * sizeof(T), cudaMemcpyHostToDevice, stream_),
            "cudaMemcpyAsync");
    }
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");  // the host vectors go now
    data_ready_ = true;
  }

  void forward(int microbatch, const void* input, void* output, void* keep_b) override {
    check_mlp_microbatch(c_, microbatch, "forward");
    if (!data_ready_) throw std::logic_error("MlpStage::forward: call begin_iteration first (the CUDA stage uploads its data there)");
    check_mlp_forward_buffers(stage_, input, output, keep_b);
    T* kb = static_cast<T*>(keep_b);
    const T* src = stage_ == 0 ? inputs_.get() + static_cast<std::size_t>(microbatch) * S_ : static_cast<const T*>(input);
    check(cudaMemcpyAsync(kb, src, S_ * sizeof(T), cudaMemcpyDeviceToDevice, stream_), "cudaMemcpyAsync");
    const T one = T(1), zero = T(0);
    for (int l = 0; l < L_; ++l) {
      const T* x = kb + 2 * static_cast<std::size_t>(l) * S_;
      T* z = kb + (2 * static_cast<std::size_t>(l) + 1) * S_;
      const T* W = weight(l);
      check(gemm(handle_, CUBLAS_OP_T, CUBLAS_OP_N, n_, R_, n_, &one, W, n_, x, n_, &zero, z, n_), gemm_name<T>());
      T* y = nullptr;
      if (!(last_ && l + 1 == L_)) {
        y = l + 1 < L_ ? kb + 2 * static_cast<std::size_t>(l + 1) * S_ : static_cast<T*>(output);
      }
      bias_tanh_kernel<T><<<blocks_for(S_), kThreads, 0, stream_>>>(W + static_cast<std::size_t>(n_) * n_, z, y, R_, n_);
      check_launch("bias_tanh_kernel");
    }
    if (last_) {
      T* z = kb + (2 * static_cast<std::size_t>(L_) - 1) * S_;
      residual_loss_kernel<T><<<1, kThreads, 0, stream_>>>(
          z, targets_.get() + static_cast<std::size_t>(microbatch) * S_, static_cast<T*>(output), static_cast<int>(S_));
      check_launch("residual_loss_kernel");
    }
  }

  void backward_input(int microbatch, const void* keep_b, const void* grad_output, void* grad_input,
                      void* keep_w) override {
    check_mlp_microbatch(c_, microbatch, "backward_input");
    check_mlp_backward_input_buffers(stage_, last_, keep_b, grad_output, grad_input, keep_w);
    const T* kb = static_cast<const T*>(keep_b);
    T* kw = static_cast<T*>(keep_w);
    const T one = T(1), zero = T(0);
    const T residual_scale = static_cast<T>(2.0 / (static_cast<double>(S_) * c_.microbatches));
    for (int li = L_ - 1; li >= 0; --li) {
      const auto l = static_cast<std::size_t>(li);
      const T* x = kb + 2 * l * S_;
      const T* z = kb + (2 * l + 1) * S_;
      T* kx = kw + 2 * l * S_;
      T* delta = kw + (2 * l + 1) * S_;
      check(cudaMemcpyAsync(kx, x, S_ * sizeof(T), cudaMemcpyDeviceToDevice, stream_), "cudaMemcpyAsync");
      if (last_ && li + 1 == L_) {
        scale_kernel<T><<<blocks_for(S_), kThreads, 0, stream_>>>(z, delta, residual_scale, S_);
        check_launch("scale_kernel");
      } else {
        const T* g = li + 1 == L_ ? static_cast<const T*>(grad_output) : scratch_.get();
        delta_tanh_kernel<T><<<blocks_for(S_), kThreads, 0, stream_>>>(g, z, delta, S_);
        check_launch("delta_tanh_kernel");
      }
      T* gx = li > 0 ? scratch_.get() : stage_ > 0 ? static_cast<T*>(grad_input) : nullptr;
      if (gx == nullptr) continue;
      check(gemm(handle_, CUBLAS_OP_N, CUBLAS_OP_N, n_, R_, n_, &one, weight(li), n_, delta, n_, &zero, gx, n_),
            gemm_name<T>());
    }
  }

  void backward_weight(int microbatch, const void* keep_w) override {
    check_mlp_microbatch(c_, microbatch, "backward_weight");
    check_mlp_backward_weight_buffers(keep_w);
    const T* kw = static_cast<const T*>(keep_w);
    const T one = T(1);
    for (int li = 0; li < L_; ++li) {
      const auto l = static_cast<std::size_t>(li);
      const T* x = kw + 2 * l * S_;
      const T* delta = kw + (2 * l + 1) * S_;
      T* gW = grads_.get() + l * (static_cast<std::size_t>(n_) * n_ + n_);
      check(gemm(handle_, CUBLAS_OP_N, CUBLAS_OP_T, n_, n_, R_, &one, x, n_, delta, n_, &one, gW, n_), gemm_name<T>());
      bias_grad_kernel<T><<<blocks_for(static_cast<std::size_t>(n_)), kThreads, 0, stream_>>>(
          delta, gW + static_cast<std::size_t>(n_) * n_, R_, n_);
      check_launch("bias_grad_kernel");
    }
  }

  void end_iteration() override {
    ++step_;
    if (c_.optimizer == MlpConfig::kSgd) {
      sgd_kernel<T><<<blocks_for(P_), kThreads, 0, stream_>>>(params_.get(), grads_.get(),
                                                                static_cast<T>(mlp_learning_rate(c_)), P_);
      check_launch("sgd_kernel");
      return;
    }
    const double c1 = 1.0 - std::pow(c_.adam_beta1, step_), c2 = 1.0 - std::pow(c_.adam_beta2, step_);
    adam_kernel<T><<<blocks_for(P_), kThreads, 0, stream_>>>(params_.get(), grads_.get(), adam_m_.get(),
                                                             adam_v_.get(), c_.adam_beta1, c_.adam_beta2, c1, c2,
                                                             mlp_learning_rate(c_), c_.adam_epsilon, P_);
    check_launch("adam_kernel");
  }

  double loss_of(const void* output) const override {
    if (!last_) throw std::logic_error("MlpStage::loss_of: only the last stage writes a loss");
    if (output == nullptr) throw std::invalid_argument("MlpStage::loss_of: null output");
    T v{};
    check(cudaMemcpyAsync(&v, output, sizeof(T), cudaMemcpyDeviceToHost, stream_), "cudaMemcpyAsync");
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    return static_cast<double>(v);
  }

  std::vector<double> parameters() const override { return download(params_); }
  std::vector<double> gradients() const override { return download(grads_); }

  void set_parameters(const std::vector<double>& params) override {
    if (params.size() != P_) {
      throw std::invalid_argument("MlpStage::set_parameters: " + std::to_string(params.size()) + " values for " +
                                  std::to_string(P_) + " parameters");
    }
    const std::vector<T> host(params.begin(), params.end());
    check(cudaMemcpyAsync(params_.get(), host.data(), P_ * sizeof(T), cudaMemcpyHostToDevice, stream_),
          "cudaMemcpyAsync");
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }

 private:
  const T* weight(int l) const { return params_.get() + static_cast<std::size_t>(l) * (static_cast<std::size_t>(n_) * n_ + n_); }

  std::vector<double> download(const DeviceArray<T>& a) const {
    std::vector<T> host(a.size());
    check(cudaMemcpyAsync(host.data(), a.get(), a.size() * sizeof(T), cudaMemcpyDeviceToHost, stream_),
          "cudaMemcpyAsync");
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    return {host.begin(), host.end()};
  }

  MlpConfig c_;
  int stage_;
  bool last_;
  int n_, R_, L_;
  std::size_t S_, P_;
  cudaStream_t stream_;
  cublasHandle_t handle_ = nullptr;
  StageShapes shapes_;
  bool data_ready_ = false;
  int step_ = 0;
  DeviceArray<T> params_, grads_, adam_m_, adam_v_, scratch_, inputs_, targets_;
  std::vector<double> teacher_;
};

}  // namespace

std::unique_ptr<StageModel> cuda_impl::make_mlp_stage(const MlpConfig& config, int stage, void* cuda_stream) {
  const auto stream = static_cast<cudaStream_t>(cuda_stream);
  if (config.dtype == DType::kFloat32) return std::make_unique<MlpStageCuda<float>>(config, stage, stream);
  return std::make_unique<MlpStageCuda<double>>(config, stage, stream);
}

std::shared_ptr<void> cuda_impl::device_alloc(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = nullptr;
  check(cudaMalloc(&p, bytes), "cudaMalloc");
  return std::shared_ptr<void>(p, [](void* q) { cudaFree(q); });
}

}  // namespace optpipe::runtime
