// batched_bounds.h on the GPU: batched_bounds_impl.h with Thrust's CUDA policy. The problem's
// arrays are copied to the device once; each batch is copied in, evaluated and copied back
// (first increment: one stream, no pinned staging or overlap yet). evaluate_times computes the
// heads and all four bounds on the device too. Every CUDA or Thrust error
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
  explicit CudaBounds(const BoundProblem& p) : device_ops_(max_device_ops(p)) {
    // Every array of the view, on the device.
    view_ = view_of(p);
    view_.device_of = upload(device_of_, p.device_of);
    view_.dur = upload(dur_, p.dur);
    view_.op_tails = upload(op_tails_, p.op_tails);
    view_.comm_after = upload(comm_after_, p.comm_after);
    view_.activation = upload(activation_, p.activation);
    view_.room = upload(room_, p.room);
    view_.hold_f = upload(hold_f_, p.hold_f);
    view_.hold_w = upload(hold_w_, p.hold_w);
    view_.offload_release = upload(offload_release_, p.offload_release);
    view_.lag_wb = upload(lag_wb_, p.lag_wb);
    view_.offload_time = upload(offload_time_, p.offload_time);
    view_.reload_time = upload(reload_time_, p.reload_time);
    view_.group_of_device = upload(group_of_device_, p.group_of_device);
    view_.tokens = upload(tokens_, p.tokens);
    view_.token_w_weight = upload(token_w_weight_, p.token_w_weight);
    view_.token_w_extra = upload(token_w_extra_, p.token_w_extra);
    view_.latency = upload(latency_, p.latency);
  }
  const char* name() const override { return "cuda"; }
  void evaluate_times(const NodeTimesBatch& b, std::vector<double>& bounds) override {
    try {
      const std::size_t n = static_cast<std::size_t>(b.n);
      const std::size_t ops = static_cast<std::size_t>(view_.num_ops());
      const int node_scratch = node_bound_scratch_doubles(view_);
      const int node_jobs = node_bound_scratch_jobs(view_, device_ops_);
      const bool tr = b.with_transfers();
      batch_impl::NodeTimesArrays t{upload(t_end_, b.end),
                                    upload(t_device_free_, b.device_free),
                                    upload(makespan_, b.makespan_so_far),
                                    tr ? upload(t_now_, b.now) : nullptr,
                                    tr ? upload(t_level_, b.level) : nullptr,
                                    tr ? upload(t_offload_start_, b.offload_start) : nullptr,
                                    tr ? upload(t_offload_end_, b.offload_end) : nullptr,
                                    tr ? upload(t_reload_start_, b.reload_start) : nullptr,
                                    tr ? upload(t_reload_end_, b.reload_end) : nullptr,
                                    tr ? upload(t_d2h_free_, b.d2h_free) : nullptr,
                                    tr ? upload(t_h2d_free_, b.h2d_free) : nullptr};
      out_.resize(n);
      if (head_.size() < n * ops) {
        head_.resize(n * ops);
        finish_.resize(n * ops);
      }
      if (scratch_.size() < n * static_cast<std::size_t>(node_scratch)) scratch_.resize(n * static_cast<std::size_t>(node_scratch));
      if (jobs_.size() < n * static_cast<std::size_t>(node_jobs)) {
        jobs_.resize(n * static_cast<std::size_t>(node_jobs));
        heap_.resize(n * static_cast<std::size_t>(node_jobs));
      }
      const batch_impl::NodeTimesBoundFunctor f{view_,
                                                t,
                                                thrust::raw_pointer_cast(out_.data()),
                                                thrust::raw_pointer_cast(head_.data()),
                                                thrust::raw_pointer_cast(finish_.data()),
                                                thrust::raw_pointer_cast(scratch_.data()),
                                                thrust::raw_pointer_cast(jobs_.data()),
                                                thrust::raw_pointer_cast(heap_.data()),
                                                node_scratch,
                                                node_jobs};
      batch_impl::evaluate(thrust::cuda::par, f, b.n);
      check(cudaGetLastError(), "the heads-and-bounds kernel");
      bounds.resize(n);
      thrust::copy(out_.begin(), out_.end(), bounds.begin());
    } catch (const thrust::system_error& e) {
      throw std::runtime_error(std::string("CUDA error in the batched bounds from times: ") + e.what());
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
  template <class T>
  static const T* upload(thrust::device_vector<T>& to, const std::vector<T>& from) {
    to.assign(from.begin(), from.end());
    return thrust::raw_pointer_cast(to.data());
  }

  thrust::device_vector<int> device_of_, lag_wb_, group_of_device_, tokens_, token_w_extra_;
  thrust::device_vector<double> dur_, op_tails_, comm_after_, activation_, room_, hold_f_, hold_w_, offload_release_,
      offload_time_, reload_time_, token_w_weight_, latency_;
  int device_ops_;
  BoundProblemView view_;
  thrust::device_vector<double> head_, finish_, makespan_, out_, scratch_;
  thrust::device_vector<double> t_end_, t_device_free_, t_now_, t_level_, t_offload_start_, t_offload_end_,
      t_reload_start_, t_reload_end_, t_d2h_free_, t_h2d_free_;
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
