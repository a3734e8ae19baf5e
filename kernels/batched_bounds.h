// Batched node bounds (issue 4): the search hands over a batch of open nodes as plain arrays and
// gets all their bounds back at once, evaluated by the same OPTPIPE_HD functions the scalar
// search calls (bounds/*_core), on one of three backends:
//   scalar  a plain loop (the reference);
//   tbb     Thrust algorithms with the TBB execution policy (thrust::tbb::par) on the CPU;
//   cuda    the same Thrust code with the CUDA policy on the GPU, pruning with CUB's
//           DeviceSelect, a device pool and pinned staging allocated once, and chunked copies
//           on a copy stream overlapping the kernel on a compute stream (built by nvcc into
//           the CUDA plugin, plugins/cuda_plugin.h; make_cuda_bounds loads it and throws a
//           clear error when the plugin or a device is missing).
// compute_bounds() takes the nodes' times (NodeTimes) and transfers (NodeTransfers) and computes
// the heads inside the batch too (bounds/heads_core.h, with the memory rules), then
// max(critical path, one machine, channel, memory energy) (bounds/node_bound_core.h): the
// value of node_bound() (bounds/node_bound.h, the search's scalar path) for every node it does
// not cut (node_bound() skips the last two parts once the node is cut; the batch always
// computes all four).
//
// Layering (batched_bounds_impl.h): per node, the heads and the critical path and channel
// parts; per (node, device), Jackson's one-machine bound; a segmented maximum over each node's
// devices (Thrust reduce_by_key); per node, the memory energy part and the maximum of the four
// (bounds/node_bound_core.h has the phases, and node_bound_from_times_core for the scalar loop).
//
// Determinism: each phase of a node (or of a node and device) runs in one thread, sequentially,
// with the same code on every backend, and a maximum is exact whatever the reduction order, so
// the values are bit for bit equal to the scalar ones (the tests check it);
// prune() keeps the nodes whose bound is below the cutoff in their batch order (a stable
// compaction), whatever the backend and thread count.
//
// Complexity: per node O(ops log ops) (Jackson per device), the heads' O(S·m³) worst case, the
// channels' O(S·m log(S·m)) and the memory energy's O(S·m); memory: the batch's times, 2·ops
// doubles of heads and finishes, 5·max(max_device_ops, S·m) doubles of jobs and
// node_bound_scratch_doubles (4·S·m + 2·S + 4·m + 1) more doubles a node.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "bounds/bound_problem.h"

namespace optpipe {

struct NodeTransfers;  // bounds/node_transfers.h (not included: nvcc reads this header)

// n nodes by their times, structure of arrays (the layouts of NodeTimes and NodeTransfers, one
// node after the other): end [node * num_ops + op], device_free [node * D + d],
// makespan_so_far [node]; the transfers either all empty (none: static heads) or now [node],
// level / offload_start / offload_end / reload_start / reload_end [node * S * m + sj],
// d2h_free / h2d_free [node * G + g].
struct NodeTimesBatch {
  int n = 0;
  std::vector<double> end, device_free, makespan_so_far;
  std::vector<double> now, level, offload_start, offload_end, reload_start, reload_end, d2h_free, h2d_free;
  bool with_transfers() const { return !level.empty(); }
  // Appends one node (`transfers` null: none; then every node of the batch must have none).
  void add(const NodeTimes& times, const NodeTransfers* transfers);
  // Forgets the last node added (n > 0).
  void pop_back(const BoundProblem& problem);
  // Empties the batch, keeping the arrays' capacity.
  void clear();
};

class BatchedBounds {
 public:
  virtual ~BatchedBounds() = default;
  virtual const char* name() const = 0;
  // bounds[i] = max(critical path, one machine, channel, memory energy) of node i, its heads
  // computed in the batch from its times (bit for bit compute_heads with the node's transfers
  // and the four std::vector bounds, as node_bound() combines them; without transfers
  // the channel part is 0 and the memory energy sees none).
  virtual void compute_bounds(const NodeTimesBatch& batch, std::vector<double>& bounds) = 0;
  // The indices i (ascending) with bounds[i] < cutoff.
  virtual void prune(const std::vector<double>& bounds, double cutoff, std::vector<int>& kept) = 0;
};

// `problem` must outlive the evaluator (it reads the problem's arrays).
std::unique_ptr<BatchedBounds> make_scalar_bounds(const BoundProblem& problem);
std::unique_ptr<BatchedBounds> make_tbb_bounds(const BoundProblem& problem);
// Throws std::runtime_error naming the reason when the CUDA plugin cannot be loaded or no GPU is
// present.
// `capacity`: the batch size (nodes) its device pool and pinned staging buffers are allocated
// for up front; a larger batch grows them by doubling (batched_bounds_cuda.cu).
std::unique_ptr<BatchedBounds> make_cuda_bounds(const BoundProblem& problem, int capacity = 4096);

// The most ops one device has (types x m x its stages): the scratch a node needs. Inline: the
// CUDA plugin uses it too, and links nothing of the core.
inline int max_device_ops(const BoundProblem& p) {
  std::vector<int> per(static_cast<std::size_t>(p.D), 0);
  for (int s = 0; s < p.S; ++s) per[static_cast<std::size_t>(p.device_of[static_cast<std::size_t>(s)])] += p.types * p.m;
  return std::max(1, *std::max_element(per.begin(), per.end()));
}

}  // namespace optpipe
