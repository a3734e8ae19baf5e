// The entry point of liboptpipe_mpi.so (mpi_plugin.h): the table of the plugin's functions,
// compiled into the plugin only.
#include <mpi.h>

#include <string>

#include "plugins/mpi_plugin.h"
#include "runtime/transport.h"

namespace {

std::string describe() {
#if defined(OMPI_MAJOR_VERSION)
  return "Open MPI " + std::to_string(OMPI_MAJOR_VERSION) + "." + std::to_string(OMPI_MINOR_VERSION) + "." +
         std::to_string(OMPI_RELEASE_VERSION);
#else
  return "MPI " + std::to_string(MPI_VERSION) + "." + std::to_string(MPI_SUBVERSION);
#endif
}

}  // namespace

extern "C" const optpipe::MpiPluginV1* optpipe_mpi_plugin_v1() {
  static const std::string description = describe();
  static const optpipe::MpiPluginV1 table = {optpipe::kMpiPluginVersion, OPTPIPE_PLUGIN_ABI, description.c_str(),
                                             &optpipe::runtime::mpi_impl::make_transport};
  return &table;
}
