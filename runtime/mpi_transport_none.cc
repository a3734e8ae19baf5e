// make_mpi_transport for builds without MPI.
#include <cstdlib>

#include "runtime/mpi_transport.h"

namespace optpipe::runtime {

bool have_mpi() { return false; }

bool launched_by_mpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_SIZE") != nullptr;
}

std::unique_ptr<Transport> make_mpi_transport(int) {
  throw TransportError("this build has no MPI (install Open MPI: scripts/setup.sh, then rebuild)");
}

}  // namespace optpipe::runtime
