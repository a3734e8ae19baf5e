// The scalar reference of batched_bounds.h, and what every backend shares.
#include <algorithm>

#include "bounds/bound_view.h"
#include "bounds/critical_path_bound.h"
#include "bounds/heads_core.h"
#include "bounds/node_transfers.h"
#include "bounds/one_machine_bound.h"
#include "kernels/batched_bounds.h"
#include "bounds/node_bound_core.h"

namespace optpipe {

void NodeTimesBatch::add(const NodeTimes& times, const NodeTransfers* transfers) {
  end.insert(end.end(), times.end.begin(), times.end.end());
  device_free.insert(device_free.end(), times.device_free.begin(), times.device_free.end());
  makespan_so_far.push_back(times.makespan_so_far);
  if (transfers) {
    const NodeTransfers& t = *transfers;
    now.push_back(t.now);
    level.insert(level.end(), t.level.begin(), t.level.end());
    offload_start.insert(offload_start.end(), t.offload_start.begin(), t.offload_start.end());
    offload_end.insert(offload_end.end(), t.offload_end.begin(), t.offload_end.end());
    reload_start.insert(reload_start.end(), t.reload_start.begin(), t.reload_start.end());
    reload_end.insert(reload_end.end(), t.reload_end.begin(), t.reload_end.end());
    d2h_free.insert(d2h_free.end(), t.d2h_free.begin(), t.d2h_free.end());
    h2d_free.insert(h2d_free.end(), t.h2d_free.begin(), t.h2d_free.end());
  }
  ++n;
}

void NodeTimesBatch::pop_back(const BoundProblem& p) {
  const std::size_t ops = static_cast<std::size_t>(p.num_ops());
  const std::size_t sm = static_cast<std::size_t>(p.S) * static_cast<std::size_t>(p.m);
  const std::size_t D = static_cast<std::size_t>(p.D), G = static_cast<std::size_t>(p.G);
  end.resize(end.size() - ops);
  device_free.resize(device_free.size() - D);
  makespan_so_far.pop_back();
  if (with_transfers()) {
    now.pop_back();
    for (std::vector<double>* v : {&level, &offload_start, &offload_end, &reload_start, &reload_end}) v->resize(v->size() - sm);
    d2h_free.resize(d2h_free.size() - G);
    h2d_free.resize(h2d_free.size() - G);
  }
  --n;
}

void NodeTimesBatch::clear() {
  for (std::vector<double>* v : {&end, &device_free, &makespan_so_far, &now, &level, &offload_start, &offload_end,
                                 &reload_start, &reload_end, &d2h_free, &h2d_free}) {
    v->clear();
  }
  n = 0;
}

namespace {

class ScalarBounds final : public BatchedBounds {
 public:
  explicit ScalarBounds(const BoundProblem& p) : view_(view_of(p)) {
    jobs_.resize(static_cast<std::size_t>(node_bound_scratch_jobs(view_, max_device_ops(p))));
    heap_.resize(jobs_.size());
    head_.resize(static_cast<std::size_t>(view_.num_ops()));
    finish_.resize(head_.size());
    scratch_.resize(static_cast<std::size_t>(node_bound_scratch_doubles(view_)));
  }
  const char* name() const override { return "scalar"; }
  void compute_bounds(const NodeTimesBatch& b, std::vector<double>& bounds) override {
    const std::size_t ops = static_cast<std::size_t>(view_.num_ops());
    const std::size_t sm = static_cast<std::size_t>(view_.S) * static_cast<std::size_t>(view_.m);
    const std::size_t D = static_cast<std::size_t>(view_.D), G = static_cast<std::size_t>(view_.G);
    bounds.resize(static_cast<std::size_t>(b.n));
    for (int i = 0; i < b.n; ++i) {
      const std::size_t k = static_cast<std::size_t>(i);
      NodeTransfersView nt;
      if (b.with_transfers()) {
        nt.now = b.now[k];
        nt.level = b.level.data() + k * sm;
        nt.offload_start = b.offload_start.data() + k * sm;
        nt.offload_end = b.offload_end.data() + k * sm;
        nt.reload_start = b.reload_start.data() + k * sm;
        nt.reload_end = b.reload_end.data() + k * sm;
        nt.d2h_free = b.d2h_free.data() + k * G;
        nt.h2d_free = b.h2d_free.data() + k * G;
      }
      bounds[k] = node_bound_from_times_core(view_, b.end.data() + k * ops, b.device_free.data() + k * D,
                                             b.makespan_so_far[k], b.with_transfers() ? &nt : nullptr, head_.data(),
                                             finish_.data(), scratch_.data(), jobs_.data(), heap_.data());
    }
  }
  void prune(const std::vector<double>& bounds, double cutoff, std::vector<int>& kept) override {
    kept.clear();
    for (int i = 0; i < static_cast<int>(bounds.size()); ++i) {
      if (bounds[i] < cutoff) kept.push_back(i);
    }
  }

 private:
  BoundProblemView view_;
  std::vector<OneMachineJob> jobs_;
  std::vector<JacksonEntry> heap_;
  std::vector<double> head_, finish_, scratch_;
};

}  // namespace

std::unique_ptr<BatchedBounds> make_scalar_bounds(const BoundProblem& problem) {
  return std::make_unique<ScalarBounds>(problem);
}

}  // namespace optpipe
