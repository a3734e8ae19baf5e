// Transport (transport.h) over MPI (Open MPI from Debian): one process per device, started with
// `mpirun -np D`, on one machine or several (`mpirun --hostfile`). Messages are MPI_Isend /
// MPI_Irecv of bytes on MPI_COMM_WORLD; a wait polls MPI_Test until its deadline, so a peer
// that stopped sending ends in a TransportError instead of a hang; abort() calls MPI_Abort,
// which makes mpirun stop every rank.
#pragma once

#include <memory>

#include "runtime/transport.h"

namespace optpipe::runtime {

// True when this build has MPI.
bool have_mpi();
// True when the process was started by mpirun (Open MPI's environment), so that MPI_Init makes
// a multi-rank world.
bool launched_by_mpirun();

// Initialises MPI (thread level funneled) once per process; MPI_Finalize runs when the last
// transport is destroyed. `max_tag`: the largest message tag the caller will use (checked
// against MPI_TAG_UB). Throws TransportError without MPI.
std::unique_ptr<Transport> make_mpi_transport(int max_tag);

}  // namespace optpipe::runtime
