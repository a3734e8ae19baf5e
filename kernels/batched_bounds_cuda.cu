// batched_bounds.h on the GPU: batched_bounds_impl.h with Thrust's CUDA policy. The problem's
// arrays are copied to the device once; each batch is copied in, evaluated and copied back
// (first increment: one stream, no pinned staging or overlap yet). Every CUDA or Thrust error
// becomes a std::runtime_error naming the step.
#include <cuda_runtime.h>
#include <thrust/device_vector.h>
#include <thrust/system/cuda/execution_policy.h>
#include <thrust/system_error.h>

#include <stdexcept>
#include <string>

#include "kernels/batched_bounds.h"
#include "kernels/batched_bounds_impl.h"

namespace optpipe {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("CUDA error in ") + what + ": " + cudaGetErrorString(e));
}

class CudaBounds final : public BatchedBounds {
 public:
  explicit CudaBounds(const BoundProblem& p)
      : device_of_(p.device_of.begin(), p.device_of.end()),
        dur_(p.dur.begin(), p.dur.end()),
        op_tails_(p.op_tails.begin(), p.op_tails.end()),
        device_ops_(max_device_ops(p)) {
    view_ = view_of(p);
    view_.device_of = thrust::raw_pointer_cast(device_of_.data());
    view_.dur = thrust::raw_pointer_cast(dur_.data());
    view_.op_tails = thrust::raw_pointer_cast(op_tails_.data());
  }
  const char* name() const override { return "cuda"; }
  void evaluate(const NodeBatch& b, std::vector<double>& bounds) override {
    try {
      head_.assign(b.head.begin(), b.head.end());
      finish_.assign(b.finish.begin(), b.finish.end());
      makespan_.assign(b.makespan_so_far.begin(), b.makespan_so_far.end());
      out_.resize(static_cast<std::size_t>(b.n));
      const std::size_t scratch = static_cast<std::size_t>(b.n) * static_cast<std::size_t>(device_ops_);
      if (jobs_.size() < scratch) {
        jobs_.resize(scratch);
        heap_.resize(scratch);
      }
      const batch_impl::NodeBoundFunctor f{view_,
                                           thrust::raw_pointer_cast(head_.data()),
                                           thrust::raw_pointer_cast(finish_.data()),
                                           thrust::raw_pointer_cast(makespan_.data()),
                                           thrust::raw_pointer_cast(out_.data()),
                                           thrust::raw_pointer_cast(jobs_.data()),
                                           thrust::raw_pointer_cast(heap_.data()),
                                           device_ops_};
      batch_impl::evaluate(thrust::cuda::par, f, b.n);
      check(cudaGetLastError(), "the bound kernel");
      bounds.resize(static_cast<std::size_t>(b.n));
      thrust::copy(out_.begin(), out_.end(), bounds.begin());
    } catch (const thrust::system_error& e) {
      throw std::runtime_error(std::string("CUDA error in the batched bounds: ") + e.what());
    }
  }
  void prune(const std::vector<double>& bounds, double cutoff, std::vector<int>& kept) override {
    try {
      out_.assign(bounds.begin(), bounds.end());
      kept_.resize(bounds.size());
      const int k = batch_impl::prune(thrust::cuda::par, thrust::raw_pointer_cast(out_.data()),
                                      static_cast<int>(bounds.size()), cutoff, thrust::raw_pointer_cast(kept_.data()));
      kept.resize(static_cast<std::size_t>(k));
      thrust::copy(kept_.begin(), kept_.begin() + k, kept.begin());
    } catch (const thrust::system_error& e) {
      throw std::runtime_error(std::string("CUDA error in the batched pruning: ") + e.what());
    }
  }

 private:
  thrust::device_vector<int> device_of_;
  thrust::device_vector<double> dur_, op_tails_;
  int device_ops_;
  BoundProblemView view_;
  thrust::device_vector<double> head_, finish_, makespan_, out_;
  thrust::device_vector<OneMachineJob> jobs_;
  thrust::device_vector<JacksonEntry> heap_;
  thrust::device_vector<int> kept_;
};

}  // namespace

std::unique_ptr<BatchedBounds> make_cuda_bounds(const BoundProblem& problem) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    throw std::runtime_error(std::string("--bounds gpu: no CUDA device (") +
                             (e != cudaSuccess ? cudaGetErrorString(e) : "none found") + ")");
  }
  try {
    return std::make_unique<CudaBounds>(problem);
  } catch (const thrust::system_error& ex) {
    throw std::runtime_error(std::string("CUDA error setting up the batched bounds: ") + ex.what());
  }
}

}  // namespace optpipe
