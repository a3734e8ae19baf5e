// Which CUDA devices this process can use: the run-time answer behind `--bounds auto|gpu|cpu`
// (the batched-bounds issue) and `optpipe devices`.
//
// The query itself runs in the CUDA plugin (plugins/cuda_plugin.h; cuda_devices.cu, built by
// nvcc into liboptpipe_cuda.so); query_cuda_devices (cuda_devices_via_plugin.cc) loads the
// plugin on its first call. Never throws: a plugin that cannot be loaded, a missing driver or no
// device is a status, not an error.
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
  bool plugin_loaded = false;    // the CUDA plugin (CUDA code for sm_90) is loaded
  std::string plugin;            // its file and what it holds, e.g. "build/liboptpipe_cuda.so (CUDA runtime 13.0, sm_90, ...)"
  std::vector<CudaDevice> devices;
  std::string status;            // e.g. "2 CUDA devices", "no CUDA device: ...", "no CUDA plugin: ..."
};

CudaDevices query_cuda_devices();

}  // namespace optpipe
