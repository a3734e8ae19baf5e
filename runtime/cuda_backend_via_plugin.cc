// cuda_backend.h in the core: the CUDA/NCCL backend and the NCCL transport come from the CUDA
// plugin (cuda_backend.cc inside liboptpipe_cuda.so), loaded on first need.
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>

#include "plugins/cuda_plugin.h"
#include "plugins/plugin_loader.h"
#include "runtime/cuda_backend.h"

namespace optpipe::runtime {
namespace {

// The plugin when it has the backend; otherwise null and the reason.
const CudaPluginV1* plugin_with_backend(std::string& why) {
  const CudaPluginV1* p = cuda_plugin(&why);
  if (p && (!p->make_backend || !p->make_nccl_transport)) {
    why = "the CUDA plugin " + cuda_plugin_load().path + " has no CUDA/NCCL backend (" + p->description +
          "): NCCL was not found when it was built";
    return nullptr;
  }
  return p;
}

}  // namespace

bool have_cuda_backend(std::string* why) {
  std::string reason;
  const bool ok = plugin_with_backend(reason) != nullptr;
  if (!ok && why) *why = reason;
  return ok;
}

int local_rank() {
  const char* v = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  return v ? std::atoi(v) : 0;
}

std::unique_ptr<DeviceBackend> make_cuda_backend(int device) {
  std::string why;
  const CudaPluginV1* p = plugin_with_backend(why);
  if (!p) throw std::runtime_error(why);
  return p->make_backend(device);
}

std::unique_ptr<Transport> make_nccl_transport(DeviceBackend& backend, std::unique_ptr<Transport> control, int stages,
                                               int microbatches) {
  std::string why;
  const CudaPluginV1* p = plugin_with_backend(why);
  if (!p) throw TransportError(why);
  return p->make_nccl_transport(backend, std::move(control), stages, microbatches);
}

}  // namespace optpipe::runtime
