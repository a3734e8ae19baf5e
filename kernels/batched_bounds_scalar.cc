// The scalar reference of batched_bounds.h, and what every backend shares.
#include <algorithm>

#include "engine/bounds/bound_view.h"
#include "engine/bounds/critical_path_bound.h"
#include "engine/bounds/one_machine_bound.h"
#include "kernels/batched_bounds.h"

namespace optpipe {

int max_device_ops(const BoundProblem& p) {
  std::vector<int> per(static_cast<std::size_t>(p.D), 0);
  for (int s = 0; s < p.S; ++s) per[p.device_of[s]] += p.types * p.m;
  return std::max(1, *std::max_element(per.begin(), per.end()));
}

namespace {

class ScalarBounds final : public BatchedBounds {
 public:
  explicit ScalarBounds(const BoundProblem& p) : view_(view_of(p)) {
    jobs_.resize(static_cast<std::size_t>(max_device_ops(p)));
    heap_.resize(jobs_.size());
  }
  const char* name() const override { return "scalar"; }
  void evaluate(const NodeBatch& b, std::vector<double>& bounds) override {
    const int ops = view_.num_ops();
    bounds.resize(static_cast<std::size_t>(b.n));
    for (int i = 0; i < b.n; ++i) {
      const double cp = critical_path_core(view_, b.makespan_so_far[i], b.finish.data() + static_cast<std::size_t>(i) * ops);
      const double om = one_machine_core(view_, b.head.data() + static_cast<std::size_t>(i) * ops, jobs_.data(), heap_.data());
      bounds[i] = hd::max(cp, om);
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
};

}  // namespace

std::unique_ptr<BatchedBounds> make_scalar_bounds(const BoundProblem& problem) {
  return std::make_unique<ScalarBounds>(problem);
}

}  // namespace optpipe
