// What differs between the executor's backends below the core (executor.h): where a device's
// buffers live, how the copy streams move kept activations to host memory and back, and how
// the compute stream is ordered against the copies and the messages. The core calls these in
// the spec's order; the CPU backend (cpu_backend.h) implements them with host memory and
// memcpy, the CUDA backend (cuda_backend.h) with device memory, pinned host memory and CUDA
// streams and events.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "runtime/stage_model.h"

namespace optpipe::runtime {

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;
  virtual const char* name() const = 0;
  // A buffer the model computes on (device memory), and host memory for offloads; both live
  // as long as the backend. Zero bytes gives a valid (possibly null) pointer.
  virtual void* device_buffer(std::size_t bytes) = 0;
  virtual void* host_buffer(std::size_t bytes) = 0;
  // Called right after a compute op was issued: the copies and sends that follow must see its
  // results (CUDA: an event recorded on the compute stream).
  virtual void compute_issued() = 0;
  // Run on the copy streams' threads; return once the copy is complete.
  virtual void copy_to_host(void* host, const void* device, std::size_t bytes) = 0;
  virtual void copy_to_device(void* device, const void* host, std::size_t bytes) = 0;
  // Overwrites device bytes with NaN of `dtype` (after an offload: a missed reload shows).
  virtual void poison(void* device, std::size_t bytes, DType dtype) = 0;
  // Waits until every compute op issued so far has finished.
  virtual void synchronize() = 0;
  // The compute stream as the backend's native handle (a cudaStream_t), or null (CPU).
  virtual void* native_compute_stream() { return nullptr; }
  // The model of `stage` for this backend (the reference MLP in mlp_model.h / mlp_model_cuda.h).
  virtual std::unique_ptr<StageModel> make_model(const struct MlpConfig& config, int stage) = 0;
};

}  // namespace optpipe::runtime
