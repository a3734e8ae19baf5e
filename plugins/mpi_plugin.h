// The MPI plugin, liboptpipe_mpi.so: the executor's MPI transport (runtime/mpi_transport.cc),
// outside the core so that `optpipe` (and `optpipe train` on threads) neither needs nor loads
// libmpi. The core loads it through mpi_plugin() (plugin_loader.h) when `optpipe train` runs
// under mpirun; make_mpi_transport (runtime/mpi_transport.h) forwards to this table.
//
// One C symbol, optpipe_mpi_plugin_v1, returns a static table of C++ function pointers
// (plugin_abi.h). The loader opens this plugin with RTLD_GLOBAL: some Open MPI builds' own
// components, which libmpi dlopens, expect libmpi's symbols in the global scope.
#pragma once

#include <memory>

#include "plugins/plugin_abi.h"

namespace optpipe {

namespace runtime {
class Transport;  // runtime/transport.h
}  // namespace runtime

inline constexpr int kMpiPluginVersion = 1;

struct MpiPluginV1 {
  int version;              // kMpiPluginVersion
  const char* abi;          // OPTPIPE_PLUGIN_ABI of the plugin's build
  const char* description;  // e.g. "Open MPI 4.1.4"
  // runtime/mpi_transport.h, make_mpi_transport.
  std::unique_ptr<runtime::Transport> (*make_transport)(int max_tag);
};

// The implementation inside the plugin (runtime/mpi_transport.cc).
namespace runtime::mpi_impl {
std::unique_ptr<Transport> make_transport(int max_tag);
}  // namespace runtime::mpi_impl

}  // namespace optpipe

extern "C" const optpipe::MpiPluginV1* optpipe_mpi_plugin_v1();
