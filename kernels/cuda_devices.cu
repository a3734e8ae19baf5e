// The CUDA device query inside the CUDA plugin (kernels/cuda_devices.h, plugins/cuda_plugin.h).
#include <cuda_runtime.h>

#include "kernels/cuda_devices.h"
#include "plugins/cuda_plugin.h"

namespace optpipe::cuda_impl {

CudaDevices query_devices() {
  CudaDevices out;
  out.plugin_loaded = true;
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    out.status = std::string("no CUDA device: ") + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")";
    cudaGetLastError();  // clear the sticky error so later CUDA calls start clean
    return out;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    const cudaError_t perr = cudaGetDeviceProperties(&prop, i);
    if (perr != cudaSuccess) {
      out.status = std::string("cannot read CUDA device ") + std::to_string(i) + ": " + cudaGetErrorString(perr);
      return out;
    }
    CudaDevice d;
    d.index = i;
    d.name = prop.name;
    d.major = prop.major;
    d.minor = prop.minor;
    d.memory_bytes = static_cast<double>(prop.totalGlobalMem);
    d.multiprocessors = prop.multiProcessorCount;
    out.devices.push_back(d);
  }
  out.status = count == 0 ? "no CUDA device: cudaGetDeviceCount found none"
                          : std::to_string(count) + " CUDA device" + (count == 1 ? "" : "s");
  return out;
}

}  // namespace optpipe::cuda_impl
