#include "kernels/cuda_devices.h"

namespace optpipe {

CudaDevices query_cuda_devices() {
  CudaDevices out;
  out.built_with_cuda = false;
  out.status = "built without CUDA (no nvcc at configure time): bounds run on the CPU";
  return out;
}

}  // namespace optpipe
