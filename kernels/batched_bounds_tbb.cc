// batched_bounds.h on the CPU: batched_bounds_impl.h with Thrust's TBB execution policy, on the
// batch's host arrays.
#include <thrust/system/tbb/execution_policy.h>

#include "kernels/batched_bounds.h"
#include "kernels/batched_bounds_impl.h"

namespace optpipe {
namespace {

class TbbBounds final : public BatchedBounds {
 public:
  explicit TbbBounds(const BoundProblem& p) : view_(view_of(p)), device_ops_(max_device_ops(p)) {}
  const char* name() const override { return "tbb"; }
  void compute_bounds(const NodeTimesBatch& b, std::vector<double>& bounds) override {
    bounds.resize(static_cast<std::size_t>(b.n));
    const std::size_t n = static_cast<std::size_t>(b.n);
    const std::size_t ops = static_cast<std::size_t>(view_.num_ops());
    const int node_scratch = node_bound_scratch_doubles(view_);
    const int node_jobs = batch_impl::batch_node_jobs(view_, device_ops_);
    grow(jobs_, n * static_cast<std::size_t>(node_jobs));
    grow(heap_, n * static_cast<std::size_t>(node_jobs));
    grow(head_, n * ops);
    grow(finish_, n * ops);
    grow(scratch_, n * static_cast<std::size_t>(node_scratch));
    grow(cp_, n);
    grow(ch_, n);
    grow(om_, n);
    grow(om_device_, n * static_cast<std::size_t>(view_.D));
    const bool tr = b.with_transfers();
    const batch_impl::NodeTimesArrays t{b.end.data(),
                                        b.device_free.data(),
                                        b.makespan_so_far.data(),
                                        tr ? b.now.data() : nullptr,
                                        tr ? b.level.data() : nullptr,
                                        tr ? b.offload_start.data() : nullptr,
                                        tr ? b.offload_end.data() : nullptr,
                                        tr ? b.reload_start.data() : nullptr,
                                        tr ? b.reload_end.data() : nullptr,
                                        tr ? b.d2h_free.data() : nullptr,
                                        tr ? b.h2d_free.data() : nullptr};
    const batch_impl::NodeBoundPhases phases{view_,        t,          bounds.data(), head_.data(),       finish_.data(),
                                             scratch_.data(), jobs_.data(), heap_.data(), cp_.data(),         ch_.data(),
                                             om_.data(),   om_device_.data(), node_scratch, node_jobs, device_ops_};
    batch_impl::evaluate(thrust::tbb::par, phases, 0, b.n);
  }
  void prune(const std::vector<double>& bounds, double cutoff, std::vector<int>& kept) override {
    kept.resize(bounds.size());
    const int k = batch_impl::prune(thrust::tbb::par, bounds.data(), static_cast<int>(bounds.size()), cutoff, kept.data());
    kept.resize(static_cast<std::size_t>(k));
  }

 private:
  BoundProblemView view_;
  int device_ops_;
  std::vector<OneMachineJob> jobs_;  // per-node scratch, kept between batches
  std::vector<JacksonEntry> heap_;
  std::vector<double> head_, finish_, scratch_;  // compute_bounds: per-node heads, finishes, scratch
  std::vector<double> cp_, ch_, om_, om_device_;  // the parts per node, the one-machine part per (node, device)

  template <class T>
  static void grow(std::vector<T>& v, std::size_t n) {
    if (v.size() < n) v.resize(n);
  }
};

}  // namespace

std::unique_ptr<BatchedBounds> make_tbb_bounds(const BoundProblem& problem) {
  return std::make_unique<TbbBounds>(problem);
}

}  // namespace optpipe
