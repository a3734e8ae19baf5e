// batched_bounds.h on the GPU, inside the CUDA plugin (plugins/cuda_plugin.h; make_cuda_bounds in
// batched_bounds_via_plugin.cc loads it): batched_bounds_impl.h with Thrust's CUDA policy (a kernel per
// node for the heads, critical path and channel parts, one per (node, device) for Jackson's
// one-machine bound, a segmented maximum over devices, one per node for the memory energy
// part), pruning with CUB's DeviceSelect.
//
// Memory. The problem's arrays go to the device once. The batch's arrays (the node times and
// transfers, the per-node heads, finishes and scratch, the bounds, the kept indices and CUB's
// temporary storage) live in one device pool per evaluator, sized at construction for
// `capacity` nodes (the search passes its batch size times a typical branching factor; at most
// kFirstNodes at first) and grown by doubling when a batch is larger, so a search allocates a
// handful of times, not once per batch. The host side stages each batch in pinned (page-locked)
// buffers, so the copies are truly asynchronous.
//
// Thrust's temporary storage (reduce_by_key's) comes from the evaluator's own blocks
// (TempBlocks), not from Thrust's default allocator: that one calls cudaMalloc and cudaFree in
// every call, and cudaFree waits for the whole device, so with one evaluator per search thread
// each thread's batch waited for every other thread's kernels (on an H200, 2026-11-27,
// `solver_table --time-limit 3 --bounds gpu`: gpt-8x24-tight with 16 threads searched 214
// nodes/s against 3.9k/s with one; bench/README.md, "On an H200").
//
// Overlap. A batch of n nodes is cut into up to kChunks chunks. For chunk c the host packs its
// nodes into the pinned buffers and queues the host-to-device copies on the copy stream, then
// an event; the compute stream waits for that event, runs the heads-and-bounds kernel on the
// chunk and copies the chunk's bounds back into pinned memory. So the copy of chunk c + 1 (and
// the host's packing of it) overlaps the evaluation of chunk c (the kernels are queued with
// Thrust's par_nosync policy: the for_each passes return at once; reduce_by_key still waits for
// its own kernels, as it reads back how many segments it wrote). One compute stream and one copy
// stream per evaluator; compute_bounds returns after the compute stream has drained.
//
// Determinism: one thread per node, the same sequential code as the scalar path (bounds/
// *_core.h; built with --fmad=false), so the bounds are bit for bit the CPU's; DeviceSelect::If
// is a stable compaction, so the kept indices come out in batch order.
//
// Errors: every CUDA runtime and CUB call's status is checked; a failure becomes a
// std::runtime_error naming the step and CUDA's message (Thrust's own errors are caught and
// rethrown the same way).
#include <cub/device/device_select.cuh>
#include <cuda_runtime.h>
#include <thrust/device_vector.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/system/cuda/execution_policy.h>
#include <thrust/system_error.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/batched_bounds.h"
#include "kernels/batched_bounds_impl.h"
#include "plugins/cuda_plugin.h"

namespace optpipe {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear a non-sticky error so that the next call starts clean
    throw std::runtime_error(std::string("CUDA error in ") + what + ": " + cudaGetErrorName(e) + " (" +
                             cudaGetErrorString(e) + ")");
  }
}

// Device memory for `n` objects of T (no construction: plain data only).
template <class T>
class DeviceArray {
 public:
  DeviceArray() = default;
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  ~DeviceArray() { cudaFree(p_); }
  // Keeps the contents only up to the old size when it grows (callers refill after growing).
  void reserve(std::size_t n, const char* what) {
    if (n <= n_) return;
    cudaFree(p_);
    p_ = nullptr;
    n_ = 0;
    check(cudaMalloc(reinterpret_cast<void**>(&p_), std::max<std::size_t>(n, 1) * sizeof(T)), what);
    n_ = n;
  }
  T* get() const { return p_; }
  std::size_t size() const { return n_; }

 private:
  T* p_ = nullptr;
  std::size_t n_ = 0;
};

// Pinned host memory for `n` objects of T.
template <class T>
class PinnedArray {
 public:
  PinnedArray() = default;
  PinnedArray(const PinnedArray&) = delete;
  PinnedArray& operator=(const PinnedArray&) = delete;
  ~PinnedArray() { cudaFreeHost(p_); }
  void reserve(std::size_t n, const char* what) {
    if (n <= n_) return;
    cudaFreeHost(p_);
    p_ = nullptr;
    n_ = 0;
    check(cudaHostAlloc(reinterpret_cast<void**>(&p_), std::max<std::size_t>(n, 1) * sizeof(T), cudaHostAllocDefault),
          what);
    n_ = n;
  }
  T* get() const { return p_; }

 private:
  T* p_ = nullptr;
  std::size_t n_ = 0;
};

// Device blocks for Thrust's temporary storage, kept for the evaluator's lifetime: allocate
// hands out a free block at least as large (or makes one), deallocate marks it free again. All
// of an evaluator's algorithms run on its compute stream, in order, so a block freed by one
// algorithm may be reused by the next while its kernels are still queued. Thrust's allocator
// interface: value_type, allocate(bytes), deallocate(pointer, bytes).
class TempBlocks {
 public:
  using value_type = char;
  TempBlocks() = default;
  TempBlocks(const TempBlocks&) = delete;
  TempBlocks& operator=(const TempBlocks&) = delete;
  ~TempBlocks() {
    for (auto& b : blocks_) cudaFree(b.p);
  }
  char* allocate(std::ptrdiff_t bytes) {
    const std::size_t n = static_cast<std::size_t>(std::max<std::ptrdiff_t>(bytes, 1));
    for (auto& b : blocks_) {
      if (!b.busy && b.size >= n) {
        b.busy = true;
        return b.p;
      }
    }
    Block b{nullptr, std::max<std::size_t>(n, 1 << 20), true};  // at least 1 MiB: few blocks
    check(cudaMalloc(reinterpret_cast<void**>(&b.p), b.size), "Thrust's temporary storage");
    blocks_.push_back(b);
    return b.p;
  }
  void deallocate(char* p, std::size_t) {
    for (auto& b : blocks_) {
      if (b.p == p) b.busy = false;
    }
  }

 private:
  struct Block {
    char* p;
    std::size_t size;
    bool busy;
  };
  std::vector<Block> blocks_;
};

class CudaBounds final : public BatchedBounds {
 public:
  static constexpr int kChunks = 4;          // most chunks a batch is cut into
  static constexpr int kMinChunkNodes = 256;  // fewer nodes are not worth a chunk of their own
  // The most nodes sized for at construction, whatever the capacity asked for (larger batches
  // grow the pools): with one evaluator per search thread, 16 evaluators sized for 8192 nodes
  // each page-locked about a gigabyte of host memory on a 768-op instance before the first batch.
  static constexpr int kFirstNodes = 1024;

  CudaBounds(const BoundProblem& p, int capacity) : device_ops_(max_device_ops(p)) {
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
    const long long sm = static_cast<long long>(view_.S) * view_.m;
    // The batch's input arrays, each with its doubles per node (NodeTimesBatch's layout).
    strides_[kEnd] = view_.num_ops();
    strides_[kDeviceFree] = view_.D;
    strides_[kMakespan] = 1;
    strides_[kNow] = 1;
    for (int f = kLevel; f <= kReloadEnd; ++f) strides_[f] = sm;
    strides_[kD2h] = view_.G;
    strides_[kH2d] = view_.G;
    node_scratch_ = node_bound_scratch_doubles(view_);
    node_jobs_ = batch_impl::batch_node_jobs(view_, device_ops_);
    check(cudaStreamCreateWithFlags(&compute_, cudaStreamNonBlocking), "creating the compute stream");
    check(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking), "creating the copy stream");
    for (auto& e : copied_) check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "creating an event");
    reserve(static_cast<std::size_t>(std::clamp(capacity, 1, kFirstNodes)));
  }
  ~CudaBounds() override {
    cudaStreamSynchronize(compute_);
    cudaStreamSynchronize(copy_);
    for (auto& e : copied_) cudaEventDestroy(e);
    cudaStreamDestroy(compute_);
    cudaStreamDestroy(copy_);
  }

  const char* name() const override { return "cuda"; }

  void compute_bounds(const NodeTimesBatch& b, std::vector<double>& bounds) override {
    const std::size_t n = static_cast<std::size_t>(b.n);
    bounds.resize(n);
    if (n == 0) return;
    try {
      reserve(n);
      const bool tr = b.with_transfers();
      const std::vector<double>* src[kFields] = {&b.end,           &b.device_free, &b.makespan_so_far, &b.now,
                                                 &b.level,         &b.offload_start, &b.offload_end,   &b.reload_start,
                                                 &b.reload_end,    &b.d2h_free,    &b.h2d_free};
      const int fields = tr ? kFields : kNow;  // without transfers only end, device_free, makespan
      batch_impl::NodeTimesArrays t{};
      const double** dst[kFields] = {&t.end,         &t.device_free,   &t.makespan_so_far, &t.now,
                                     &t.level,       &t.offload_start, &t.offload_end,     &t.reload_start,
                                     &t.reload_end,  &t.d2h_free,      &t.h2d_free};
      for (int f = 0; f < fields; ++f) *dst[f] = in_dev_[f].get();
      const batch_impl::NodeBoundPhases phases{view_,          t,
                                               out_dev_.get(), head_.get(),
                                               finish_.get(),  scratch_.get(),
                                               jobs_.get(),    heap_.get(),
                                               cp_.get(),      ch_.get(),
                                               om_.get(),      om_device_.get(),
                                               node_scratch_,  node_jobs_,
                                               device_ops_};
      const int chunks = static_cast<int>(std::clamp<std::size_t>(n / kMinChunkNodes, 1, kChunks));
      const std::size_t per = (n + static_cast<std::size_t>(chunks) - 1) / static_cast<std::size_t>(chunks);
      for (int c = 0; c < chunks; ++c) {
        const std::size_t lo = std::min(n, per * static_cast<std::size_t>(c));
        const std::size_t hi = std::min(n, lo + per);
        if (lo == hi) break;
        for (int f = 0; f < fields; ++f) {
          const std::size_t s = static_cast<std::size_t>(strides_[f]);
          if (s == 0) continue;
          const double* from = src[f]->data() + lo * s;
          double* stage = in_pinned_[f].get() + lo * s;
          std::memcpy(stage, from, (hi - lo) * s * sizeof(double));
          check(cudaMemcpyAsync(in_dev_[f].get() + lo * s, stage, (hi - lo) * s * sizeof(double), cudaMemcpyHostToDevice,
                                copy_),
                "copying a batch chunk to the device");
        }
        check(cudaEventRecord(copied_[c], copy_), "recording a chunk's copy");
        check(cudaStreamWaitEvent(compute_, copied_[c], 0), "waiting for a chunk's copy");
        batch_impl::evaluate(thrust::cuda::par_nosync(temp_).on(compute_), phases,
                             static_cast<long long>(lo), static_cast<long long>(hi));
        check(cudaGetLastError(), "the node-bound kernels");
        check(cudaMemcpyAsync(out_pinned_.get() + lo, out_dev_.get() + lo, (hi - lo) * sizeof(double),
                              cudaMemcpyDeviceToHost, compute_),
              "copying a chunk's bounds back");
      }
      check(cudaStreamSynchronize(compute_), "the batched bounds (stream synchronisation)");
      std::memcpy(bounds.data(), out_pinned_.get(), n * sizeof(double));
    } catch (const thrust::system_error& e) {
      throw std::runtime_error(std::string("CUDA error in the batched bounds from times: ") + e.what());
    }
  }

  void prune(const std::vector<double>& bounds, double cutoff, std::vector<int>& kept) override {
    const std::size_t n = bounds.size();
    kept.clear();
    if (n == 0) return;
    reserve(n);
    std::memcpy(out_pinned_.get(), bounds.data(), n * sizeof(double));
    check(cudaMemcpyAsync(out_dev_.get(), out_pinned_.get(), n * sizeof(double), cudaMemcpyHostToDevice, compute_),
          "copying the bounds to prune");
    std::size_t temp = select_temp_.size();
    check(cub::DeviceSelect::If(select_temp_.get(), temp, thrust::counting_iterator<int>(0), kept_dev_.get(),
                                count_dev_.get(), static_cast<int>(n), batch_impl::BelowCutoff{out_dev_.get(), cutoff},
                                compute_),
          "cub::DeviceSelect::If (pruning)");
    check(cudaMemcpyAsync(count_pinned_.get(), count_dev_.get(), sizeof(int), cudaMemcpyDeviceToHost, compute_),
          "copying the kept count back");
    check(cudaStreamSynchronize(compute_), "the pruning (stream synchronisation)");
    const int k = *count_pinned_.get();
    if (k > 0) {
      check(cudaMemcpy(kept_pinned_.get(), kept_dev_.get(), static_cast<std::size_t>(k) * sizeof(int),
                       cudaMemcpyDeviceToHost),
            "copying the kept indices back");
    }
    kept.assign(kept_pinned_.get(), kept_pinned_.get() + k);
  }

 private:
  enum Field { kEnd, kDeviceFree, kMakespan, kNow, kLevel, kOffloadStart, kOffloadEnd, kReloadStart, kReloadEnd, kD2h, kH2d, kFields };

  template <class T>
  static const T* upload(thrust::device_vector<T>& to, const std::vector<T>& from) {
    to.assign(from.begin(), from.end());
    return thrust::raw_pointer_cast(to.data());
  }

  // Room for n nodes in every pool array (doubling, so a search reallocates O(log n) times).
  void reserve(std::size_t n) {
    if (n <= capacity_) return;
    const std::size_t cap = std::max(n, 2 * capacity_);
    for (int f = 0; f < kFields; ++f) {
      const std::size_t s = static_cast<std::size_t>(strides_[f]);
      in_dev_[f].reserve(cap * s, "allocating the batch's device arrays");
      in_pinned_[f].reserve(cap * s, "allocating the pinned staging buffers");
    }
    const std::size_t ops = static_cast<std::size_t>(view_.num_ops());
    head_.reserve(cap * ops, "allocating the heads");
    finish_.reserve(cap * ops, "allocating the finishes");
    scratch_.reserve(cap * static_cast<std::size_t>(node_scratch_), "allocating the per-node scratch");
    jobs_.reserve(cap * static_cast<std::size_t>(node_jobs_), "allocating the one-machine jobs");
    heap_.reserve(cap * static_cast<std::size_t>(node_jobs_), "allocating the Jackson heaps");
    out_dev_.reserve(cap, "allocating the bounds");
    cp_.reserve(cap, "allocating the critical path parts");
    ch_.reserve(cap, "allocating the channel parts");
    om_.reserve(cap, "allocating the one-machine parts");
    om_device_.reserve(cap * static_cast<std::size_t>(view_.D), "allocating the one-machine parts per device");
    out_pinned_.reserve(cap, "allocating the pinned bounds");
    kept_dev_.reserve(cap, "allocating the kept indices");
    kept_pinned_.reserve(cap, "allocating the pinned kept indices");
    count_dev_.reserve(1, "allocating the kept count");
    count_pinned_.reserve(1, "allocating the pinned kept count");
    std::size_t temp = 0;
    check(cub::DeviceSelect::If(nullptr, temp, thrust::counting_iterator<int>(0), kept_dev_.get(), count_dev_.get(),
                                static_cast<int>(cap), batch_impl::BelowCutoff{out_dev_.get(), 0.0}, compute_),
          "sizing cub::DeviceSelect::If");
    select_temp_.reserve(temp, "allocating CUB's temporary storage");
    capacity_ = cap;
  }

  thrust::device_vector<int> device_of_, lag_wb_, group_of_device_, tokens_, token_w_extra_;
  thrust::device_vector<double> dur_, op_tails_, comm_after_, activation_, room_, hold_f_, hold_w_, offload_release_,
      offload_time_, reload_time_, token_w_weight_, latency_;
  int device_ops_;
  BoundProblemView view_;
  long long strides_[kFields] = {};
  int node_scratch_ = 0, node_jobs_ = 0;
  std::size_t capacity_ = 0;
  cudaStream_t compute_ = nullptr, copy_ = nullptr;
  TempBlocks temp_;  // Thrust's temporary storage (reduce_by_key), for the compute stream's algorithms
  cudaEvent_t copied_[kChunks] = {};
  DeviceArray<double> in_dev_[kFields];
  PinnedArray<double> in_pinned_[kFields];
  DeviceArray<double> head_, finish_, scratch_, out_dev_, cp_, ch_, om_, om_device_;
  PinnedArray<double> out_pinned_;
  DeviceArray<OneMachineJob> jobs_;
  DeviceArray<JacksonEntry> heap_;
  DeviceArray<int> kept_dev_, count_dev_;
  PinnedArray<int> kept_pinned_, count_pinned_;
  DeviceArray<unsigned char> select_temp_;
};

}  // namespace

std::unique_ptr<BatchedBounds> cuda_impl::make_bounds(const BoundProblem& problem, int capacity) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    cudaGetLastError();
    throw std::runtime_error(std::string("--bounds gpu: no CUDA device (") +
                             (e != cudaSuccess ? cudaGetErrorString(e) : "none found") + ")");
  }
  try {
    return std::make_unique<CudaBounds>(problem, capacity);
  } catch (const thrust::system_error& ex) {
    throw std::runtime_error(std::string("CUDA error setting up the batched bounds: ") + ex.what());
  }
}

}  // namespace optpipe
