// mpi_transport.h in the core: the MPI transport comes from the MPI plugin (mpi_transport.cc
// inside liboptpipe_mpi.so), loaded only when a run under mpirun asks for it.
#include <cstdlib>
#include <string>

#include "plugins/mpi_plugin.h"
#include "plugins/plugin_loader.h"
#include "runtime/mpi_transport.h"

namespace optpipe::runtime {

bool have_mpi(std::string* why) { return mpi_plugin(why) != nullptr; }

bool launched_by_mpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_SIZE") != nullptr ||
         std::getenv("PMIX_RANK") != nullptr;
}

std::unique_ptr<Transport> make_mpi_transport(int max_tag) {
  std::string why;
  const MpiPluginV1* p = mpi_plugin(&why);
  if (!p) throw TransportError(why);
  return p->make_transport(max_tag);
}

}  // namespace optpipe::runtime
