// The batched evaluation and pruning, written once over a Thrust execution policy; included by
// batched_bounds_tbb.cc (thrust::tbb::par on host arrays) and batched_bounds_cuda.cu
// (thrust::cuda::par on device arrays). Every pointer points into memory the policy can reach.
#pragma once

#include <thrust/copy.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

#include "engine/bounds/bound_view.h"
#include "engine/bounds/heads_core.h"
#include "kernels/node_bound_core.h"

namespace optpipe::batch_impl {

// The arrays of a NodeTimesBatch (batched_bounds.h) as pointers; the transfer pointers are null
// when the batch has none.
struct NodeTimesArrays {
  const double* end;
  const double* device_free;
  const double* makespan_so_far;
  const double* now;
  const double* level;
  const double* offload_start;
  const double* offload_end;
  const double* reload_start;
  const double* reload_end;
  const double* d2h_free;
  const double* h2d_free;
};

// The whole bound from the node's times (node_bound_from_times_core: heads, then critical path,
// one machine, channel and memory energy).
struct NodeTimesBoundFunctor {
  BoundProblemView p;
  NodeTimesArrays t;
  double* out;
  double* head;          // [node * ops]
  double* finish;        // [node * ops]
  double* scratch;       // [node * node_scratch]
  OneMachineJob* jobs;   // [node * node_jobs]
  JacksonEntry* heap;    // [node * node_jobs]
  int node_scratch;      // node_bound_scratch_doubles(p)
  int node_jobs;         // node_bound_scratch_jobs(p, max_device_ops)

  OPTPIPE_HD void operator()(int i) const {
    const long long k = i;
    const long long ops = p.num_ops();
    const long long sm = static_cast<long long>(p.S) * p.m;
    NodeTransfersView nt;
    if (t.level) {
      nt.now = t.now[i];
      nt.level = t.level + k * sm;
      nt.offload_start = t.offload_start + k * sm;
      nt.offload_end = t.offload_end + k * sm;
      nt.reload_start = t.reload_start + k * sm;
      nt.reload_end = t.reload_end + k * sm;
      nt.d2h_free = t.d2h_free + k * p.G;
      nt.h2d_free = t.h2d_free + k * p.G;
    }
    out[i] = node_bound_from_times_core(p, t.end + k * ops, t.device_free + k * p.D, t.makespan_so_far[i],
                                        t.level ? &nt : nullptr, head + k * ops, finish + k * ops,
                                        scratch + k * node_scratch, jobs + k * node_jobs, heap + k * node_jobs);
  }
};

struct BelowCutoff {
  const double* bounds;
  double cutoff;
  OPTPIPE_HD bool operator()(int i) const { return bounds[i] < cutoff; }
};

template <class Policy, class Functor>
void evaluate(const Policy& policy, const Functor& f, int n) {
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
