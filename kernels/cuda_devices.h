// Which CUDA devices this process can use: the run-time answer behind `--bounds auto|gpu|cpu`
// (the batched-bounds issue) and `optpipe devices`.
//
// Compiled by nvcc (cuda_devices.cu) when the build found a CUDA compiler, otherwise a plain C++
// stand-in (cuda_devices_none.cc) that reports a CPU-only build. Never throws: a missing driver
// or no device is a status, not an error.
#pragma once

#include <string>
#include <vector>

namespace optpipe {

struct CudaDevice {
  int index = 0;
  std::string name;
  int major = 0, minor = 0;      // compute capability
  double memory_bytes = 0;
  int multiprocessors = 0;
};

struct CudaDevices {
  bool built_with_cuda = false;  // this binary contains CUDA code (for sm_90)
  std::vector<CudaDevice> devices;
  std::string status;            // e.g. "2 CUDA devices", "no CUDA device: ...", "built without CUDA"
};

CudaDevices query_cuda_devices();

}  // namespace optpipe
