// The batched evaluation and pruning, written once over a Thrust execution policy; included by
// batched_bounds_tbb.cc (thrust::tbb::par on host arrays) and batched_bounds_cuda.cu
// (thrust::cuda::par on device arrays). Every pointer points into memory the policy can reach.
#pragma once

#include <thrust/copy.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/discard_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/reduce.h>

#include "bounds/bound_view.h"
#include "bounds/heads_core.h"
#include "bounds/one_machine_bound.h"
#include "bounds/node_bound_core.h"

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

// Jobs (and heap entries) a node needs in the batch: the channel part's in phase 1, then one
// region of `device_ops` per device in phase 2.
OPTPIPE_HD inline int batch_node_jobs(const BoundProblemView& p, int device_ops) {
  return hd::max(channel_scratch_jobs(p), p.D * device_ops);
}

// The phases of the node bound (bounds/node_bound_core.h) over a batch's arrays. Per node i:
// head, finish [i * ops], scratch [i * node_scratch], jobs and heap [i * node_jobs], and the
// parts cp, ch, om [i]; per node and device k = i * D + d: om_device [k], jobs and heap at
// [i * node_jobs + d * device_ops].
struct NodeBoundPhases {
  BoundProblemView p;
  NodeTimesArrays t;
  double* out;           // [node]: the bound
  double* head;          // [node * ops]
  double* finish;        // [node * ops]
  double* scratch;       // [node * node_scratch]
  OneMachineJob* jobs;   // [node * node_jobs]
  JacksonEntry* heap;    // [node * node_jobs]
  double* cp;            // [node]
  double* ch;            // [node]
  double* om;            // [node]
  double* om_device;     // [node * D]
  int node_scratch;      // node_bound_scratch_doubles(p)
  int node_jobs;         // batch_node_jobs(p, device_ops)
  int device_ops;        // max_device_ops(problem)

  OPTPIPE_HD NodeTransfersView transfers(long long i) const {
    NodeTransfersView nt;
    const long long sm = static_cast<long long>(p.S) * p.m;
    nt.now = t.now[i];
    nt.level = t.level + i * sm;
    nt.offload_start = t.offload_start + i * sm;
    nt.offload_end = t.offload_end + i * sm;
    nt.reload_start = t.reload_start + i * sm;
    nt.reload_end = t.reload_end + i * sm;
    nt.d2h_free = t.d2h_free + i * p.G;
    nt.h2d_free = t.h2d_free + i * p.G;
    return nt;
  }
  OPTPIPE_HD void phase1(long long i) const {
    const long long ops = p.num_ops();
    NodeTransfersView nt;
    if (t.level) nt = transfers(i);
    node_bound_phase1_core(p, t.end + i * ops, t.device_free + i * p.D, t.makespan_so_far[i], t.level ? &nt : nullptr,
                           head + i * ops, finish + i * ops, scratch + i * node_scratch, jobs + i * node_jobs,
                           heap + i * node_jobs, cp + i, ch + i);
  }
  OPTPIPE_HD void phase2(long long k) const {
    const long long i = k / p.D;
    const int d = static_cast<int>(k % p.D);
    const long long at = i * node_jobs + static_cast<long long>(d) * device_ops;
    om_device[k] = one_machine_device_core(p, head + i * p.num_ops(), d, jobs + at, heap + at);
  }
  OPTPIPE_HD void phase3(long long i) const {
    const long long ops = p.num_ops();
    NodeTransfersView nt;
    if (t.level) nt = transfers(i);
    out[i] = node_bound_phase3_core(p, t.end + i * ops, t.device_free + i * p.D, t.level ? &nt : nullptr,
                                    head + i * ops, finish + i * ops, scratch + i * node_scratch, cp[i], om[i], ch[i]);
  }
};

template <int Phase>
struct PhaseOp {
  NodeBoundPhases b;
  OPTPIPE_HD void operator()(long long i) const {
    if constexpr (Phase == 1) {
      b.phase1(i);
    } else if constexpr (Phase == 2) {
      b.phase2(i);
    } else {
      b.phase3(i);
    }
  }
};

struct MaxOf {
  OPTPIPE_HD double operator()(double a, double b) const { return hd::max(a, b); }
};
struct SameKey {
  OPTPIPE_HD bool operator()(long long a, long long b) const { return a == b; }
};

// The node of a (node, device) index: the key of the segmented reduction.
struct NodeOfPair {
  int D;
  OPTPIPE_HD long long operator()(long long k) const { return k / D; }
};

struct BelowCutoff {
  const double* bounds;
  double cutoff;
  OPTPIPE_HD bool operator()(int i) const { return bounds[i] < cutoff; }
};

// The bounds of nodes [lo, hi) of the batch into b.out: phase 1 per node, phase 2 per (node,
// device), the maximum over each node's devices as a segmented reduction (reduce_by_key over
// consecutive keys: exact, so deterministic whatever the backend's reduction order), phase 3 per
// node. Four passes over the policy; on a CUDA stream they run in order.
template <class Policy>
void evaluate(const Policy& policy, const NodeBoundPhases& b, long long lo, long long hi) {
  using It = thrust::counting_iterator<long long>;
  const long long D = b.p.D;
  thrust::for_each(policy, It(lo), It(hi), PhaseOp<1>{b});
  thrust::for_each(policy, It(lo * D), It(hi * D), PhaseOp<2>{b});
  auto keys = thrust::make_transform_iterator(It(lo * D), NodeOfPair{b.p.D});
  thrust::reduce_by_key(policy, keys, keys + (hi - lo) * D, b.om_device + lo * D, thrust::make_discard_iterator(),
                        b.om + lo, SameKey(), MaxOf());
  thrust::for_each(policy, It(lo), It(hi), PhaseOp<3>{b});
}

// Writes the kept indices to `kept` (room for n); returns how many.
template <class Policy>
int prune(const Policy& policy, const double* bounds, int n, double cutoff, int* kept) {
  int* end = thrust::copy_if(policy, thrust::counting_iterator<int>(0), thrust::counting_iterator<int>(n), kept,
                             BelowCutoff{bounds, cutoff});
  return static_cast<int>(end - kept);
}

}  // namespace optpipe::batch_impl
