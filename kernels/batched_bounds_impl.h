// The batched evaluation and pruning, written once over a Thrust execution policy; included by
// batched_bounds_tbb.cc (thrust::tbb::par on host arrays) and batched_bounds_cuda.cu
// (thrust::cuda::par on device arrays). Every pointer points into memory the policy can reach.
#pragma once

#include <thrust/copy.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

#include "engine/bounds/bound_view.h"
#include "engine/bounds/critical_path_bound.h"
#include "engine/bounds/one_machine_bound.h"

namespace optpipe::batch_impl {

struct NodeBoundFunctor {
  BoundProblemView p;
  const double* head;
  const double* finish;
  const double* makespan_so_far;
  double* out;
  OneMachineJob* jobs;   // [node * device_ops]
  JacksonEntry* heap;    // [node * device_ops]
  int device_ops;

  OPTPIPE_HD void operator()(int i) const {
    const int ops = p.num_ops();
    const double cp = critical_path_core(p, makespan_so_far[i], finish + static_cast<long long>(i) * ops);
    const double om = one_machine_core(p, head + static_cast<long long>(i) * ops, jobs + static_cast<long long>(i) * device_ops,
                                       heap + static_cast<long long>(i) * device_ops);
    out[i] = hd::max(cp, om);
  }
};

struct BelowCutoff {
  const double* bounds;
  double cutoff;
  OPTPIPE_HD bool operator()(int i) const { return bounds[i] < cutoff; }
};

template <class Policy>
void evaluate(const Policy& policy, const NodeBoundFunctor& f, int n) {
  thrust::for_each(policy, thrust::counting_iterator<int>(0), thrust::counting_iterator<int>(n), f);
}

// Writes the kept indices to `kept` (room for n); returns how many.
template <class Policy>
int prune(const Policy& policy, const double* bounds, int n, double cutoff, int* kept) {
  int* end = thrust::copy_if(policy, thrust::counting_iterator<int>(0), thrust::counting_iterator<int>(n), kept,
                             BelowCutoff{bounds, cutoff});
  return static_cast<int>(end - kept);
}

}  // namespace optpipe::batch_impl
