// The CUDA/NCCL backend (cuda_backend.h), inside the CUDA plugin (plugins/cuda_plugin.h;
// cuda_backend_via_plugin.cc loads it). Plain C++ against the CUDA runtime and NCCL headers: no
// kernels of its own (the model's are in mlp_model_cuda.cu), and no MPI: the control messages go
// over the MPI transport the core hands in (from the MPI plugin).
#include "runtime/cuda_backend.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "plugins/cuda_plugin.h"
#include "runtime/mlp_model.h"

namespace optpipe::runtime {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    throw std::runtime_error(std::string("CUDA error in ") + what + ": " + cudaGetErrorName(e) + " (" +
                             cudaGetErrorString(e) + ")");
  }
}

void check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw TransportError(std::string("NCCL error in ") + what + ": " + ncclGetErrorString(r));
}

class CudaBackend final : public DeviceBackend {
 public:
  explicit CudaBackend(int device) {
    int count = 0;
    check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
    if (count == 0) throw std::runtime_error("the CUDA backend found no GPU");
    device_ = device % count;
    check(cudaSetDevice(device_), "cudaSetDevice");
    check(cudaStreamCreateWithFlags(&compute_, cudaStreamNonBlocking), "cudaStreamCreate (compute)");
    check(cudaStreamCreateWithFlags(&d2h_, cudaStreamNonBlocking), "cudaStreamCreate (D2H)");
    check(cudaStreamCreateWithFlags(&h2d_, cudaStreamNonBlocking), "cudaStreamCreate (H2D)");
    check(cudaEventCreateWithFlags(&computed_, cudaEventDisableTiming), "cudaEventCreate");
  }
  ~CudaBackend() override {
    cudaSetDevice(device_);
    cudaStreamSynchronize(compute_);
    for (void* p : device_buffers_) cudaFree(p);
    for (void* p : host_buffers_) cudaFreeHost(p);
    cudaEventDestroy(computed_);
    cudaStreamDestroy(compute_);
    cudaStreamDestroy(d2h_);
    cudaStreamDestroy(h2d_);
  }
  const char* name() const override { return "cuda"; }
  void* device_buffer(std::size_t bytes) override {
    void* p = nullptr;
    check(cudaMalloc(&p, bytes > 0 ? bytes : 1), "cudaMalloc (an executor buffer)");
    device_buffers_.push_back(p);
    return p;
  }
  void* host_buffer(std::size_t bytes) override {
    void* p = nullptr;
    check(cudaHostAlloc(&p, bytes > 0 ? bytes : 1, cudaHostAllocDefault), "cudaHostAlloc (an offload buffer)");
    host_buffers_.push_back(p);
    return p;
  }
  void compute_issued() override { check(cudaEventRecord(computed_, compute_), "cudaEventRecord (compute)"); }
  void copy_to_host(void* host, const void* device, std::size_t bytes) override {
    check(cudaSetDevice(device_), "cudaSetDevice (copy thread)");
    check(cudaStreamWaitEvent(d2h_, computed_, 0), "cudaStreamWaitEvent (offload after compute)");
    check(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, d2h_), "cudaMemcpyAsync (offload)");
    check(cudaStreamSynchronize(d2h_), "cudaStreamSynchronize (offload)");
  }
  void copy_to_device(void* device, const void* host, std::size_t bytes) override {
    check(cudaSetDevice(device_), "cudaSetDevice (copy thread)");
    check(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, h2d_), "cudaMemcpyAsync (reload)");
    check(cudaStreamSynchronize(h2d_), "cudaStreamSynchronize (reload)");
  }
  void poison(void* device, std::size_t bytes, DType) override {
    // All-ones bytes are a NaN in both float and double.
    check(cudaMemsetAsync(device, 0xFF, bytes, d2h_), "cudaMemsetAsync (poison)");
    check(cudaStreamSynchronize(d2h_), "cudaStreamSynchronize (poison)");
  }
  void synchronize() override { check(cudaStreamSynchronize(compute_), "cudaStreamSynchronize (compute)"); }
  void* native_compute_stream() override { return compute_; }
  std::unique_ptr<StageModel> make_model(const MlpConfig& config, int stage) override {
    return cuda_impl::make_mlp_stage(config, stage, compute_);
  }
  int device() const { return device_; }

 private:
  int device_ = 0;
  cudaStream_t compute_ = nullptr, d2h_ = nullptr, h2d_ = nullptr;
  cudaEvent_t computed_ = nullptr;
  std::vector<void*> device_buffers_, host_buffers_;
};

// Data messages over NCCL, one communicator and stream per (kind, stage) channel; control
// messages over `control` (the MPI transport, mpi_transport.h).
class NcclTransport final : public Transport {
 public:
  NcclTransport(CudaBackend& backend, std::unique_ptr<Transport> control) : be_(backend), mpi_(std::move(control)) {
    compute_ = static_cast<cudaStream_t>(be_.native_compute_stream());
    check(cudaSetDevice(be_.device()), "cudaSetDevice");
  }
  ~NcclTransport() override {
    for (auto& [id, ch] : channels_) {
      ncclCommDestroy(ch.comm);
      cudaStreamDestroy(ch.stream);
    }
    for (auto& [id, ev] : events_) cudaEventDestroy(ev);
  }
  int rank() const override { return mpi_->rank(); }
  int size() const override { return mpi_->size(); }
  const char* name() const override { return "nccl"; }

  // Tags are message_tag() values: ((parity * 2 + kind) * S * m + stage * m + mb); the channel
  // is everything but the parity and the microbatch, which `channel_of` must be told: the
  // executor's tags are unique per (kind, stage, mb) within two iterations, so (tag / m) mod
  // (2 S) is (kind, stage).
  void set_layout(int stages, int microbatches) {
    stages_ = stages;
    mb_ = microbatches;
  }
  Request irecv(int peer, int tag, void* buffer, std::size_t bytes) override {
    Channel& ch = channel(tag);
    check(ncclRecv(buffer, bytes, ncclChar, peer, ch.comm, ch.stream), "ncclRecv");
    return record(ch.stream);
  }
  Request isend(int peer, int tag, const void* buffer, std::size_t bytes) override {
    Channel& ch = channel(tag);
    cudaEvent_t after = nullptr;
    check(cudaEventCreateWithFlags(&after, cudaEventDisableTiming), "cudaEventCreate");
    check(cudaEventRecord(after, compute_), "cudaEventRecord (before a send)");
    check(cudaStreamWaitEvent(ch.stream, after, 0), "cudaStreamWaitEvent (send after compute)");
    cudaEventDestroy(after);
    check(ncclSend(buffer, bytes, ncclChar, peer, ch.comm, ch.stream), "ncclSend");
    return record(ch.stream);
  }
  void wait(Request request, double timeout_s, const std::string& what) override {
    auto it = events_.find(request);
    if (it == events_.end()) throw TransportError("rank " + std::to_string(rank()) + ": unknown request for " + what);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (true) {
      const cudaError_t q = cudaEventQuery(it->second);
      if (q == cudaSuccess) break;
      if (q != cudaErrorNotReady) check(q, "cudaEventQuery (a message)");
      for (auto& [id, ch] : channels_) {
        ncclResult_t async = ncclSuccess;
        check(ncclCommGetAsyncError(ch.comm, &async), "ncclCommGetAsyncError");
        check(async, "a pending NCCL operation");
      }
      if (std::chrono::steady_clock::now() > deadline) {
        throw TransportError("rank " + std::to_string(rank()) + ": " + what + " did not complete within " +
                             std::to_string(timeout_s) + " s (has a peer failed, or does it run another schedule?)");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    cudaEventDestroy(it->second);
    events_.erase(it);
  }
  std::vector<std::vector<double>> gather(const std::vector<double>& mine, double timeout_s) override {
    return mpi_->gather(mine, timeout_s);
  }
  void broadcast(std::vector<char>& data, double timeout_s) override { mpi_->broadcast(data, timeout_s); }
  void abort(const std::string& why) override { mpi_->abort(why); }

  // Every rank creates every channel's communicator, in the same order (collective).
  void create_channels() {
    for (int c = 0; c < 2 * stages_; ++c) {
      ncclUniqueId id;
      if (rank() == 0) check(ncclGetUniqueId(&id), "ncclGetUniqueId");
      std::vector<char> bytes(reinterpret_cast<char*>(&id), reinterpret_cast<char*>(&id) + sizeof id);
      mpi_->broadcast(bytes, 120);
      std::memcpy(&id, bytes.data(), sizeof id);
      Channel ch;
      check(ncclCommInitRank(&ch.comm, size(), id, rank()), "ncclCommInitRank");
      check(cudaStreamCreateWithFlags(&ch.stream, cudaStreamNonBlocking), "cudaStreamCreate (channel)");
      channels_[c] = ch;
    }
  }

 private:
  struct Channel {
    ncclComm_t comm = nullptr;
    cudaStream_t stream = nullptr;
  };
  Channel& channel(int tag) {
    const int c = (tag / mb_) % (2 * stages_);
    auto it = channels_.find(c);
    if (it == channels_.end()) throw TransportError("NCCL transport: no channel for tag " + std::to_string(tag));
    return it->second;
  }
  Request record(cudaStream_t stream) {
    cudaEvent_t ev = nullptr;
    check(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "cudaEventCreate");
    check(cudaEventRecord(ev, stream), "cudaEventRecord (a message)");
    const Request id = next_++;
    events_[id] = ev;
    return id;
  }

  CudaBackend& be_;
  std::unique_ptr<Transport> mpi_;
  cudaStream_t compute_ = nullptr;
  int stages_ = 1, mb_ = 1;
  std::map<int, Channel> channels_;
  std::unordered_map<Request, cudaEvent_t> events_;
  Request next_ = 1;
};

}  // namespace

std::unique_ptr<DeviceBackend> cuda_impl::make_backend(int device) { return std::make_unique<CudaBackend>(device); }

std::unique_ptr<Transport> cuda_impl::make_nccl_transport(DeviceBackend& backend, std::unique_ptr<Transport> control,
                                                            int stages, int microbatches) {
  auto* cuda = dynamic_cast<CudaBackend*>(&backend);
  if (!cuda) throw std::invalid_argument("the NCCL transport needs the CUDA backend");
  if (!control) throw std::invalid_argument("the NCCL transport needs the MPI transport for its control messages");
  auto t = std::make_unique<NcclTransport>(*cuda, std::move(control));
  t->set_layout(stages, microbatches);
  t->create_channels();
  return t;
}

}  // namespace optpipe::runtime
