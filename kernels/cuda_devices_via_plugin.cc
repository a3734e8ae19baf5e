// query_cuda_devices (cuda_devices.h) in the core: asks the CUDA plugin, loading it on the first
// call; without a loadable plugin the status says why and there are no devices.
#include <string>

#include "kernels/cuda_devices.h"
#include "plugins/cuda_plugin.h"
#include "plugins/plugin_loader.h"

namespace optpipe {

CudaDevices query_cuda_devices() {
  std::string why;
  const CudaPluginV1* plugin = cuda_plugin(&why);
  if (!plugin) {
    CudaDevices out;
    out.status = why;
    return out;
  }
  CudaDevices out = plugin->query_devices();
  out.plugin_loaded = true;
  out.plugin = cuda_plugin_load().path + " (" + plugin->description + ")";
  return out;
}

}  // namespace optpipe
