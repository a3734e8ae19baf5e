// Transport (transport.h) over MPI (Open MPI from Debian): one process per device, started with
// `mpirun -np D`, on one machine or several (`mpirun --hostfile`). Messages are MPI_Isend /
// MPI_Irecv of bytes on MPI_COMM_WORLD; a wait polls MPI_Test until its deadline, so a peer
// that stopped sending ends in a TransportError instead of a hang; abort() calls MPI_Abort,
// which makes mpirun stop every rank.
//
// The transport lives in the MPI plugin (plugins/mpi_plugin.h; mpi_transport.cc, built into
// liboptpipe_mpi.so when MPI is found), so that the core does not need libmpi: make_mpi_transport
// loads it on first need (mpi_transport_via_plugin.cc).
#pragma once

#include <memory>
#include <string>

#include "runtime/transport.h"

namespace optpipe::runtime {

// True when the MPI plugin loads; otherwise `*why` says why not.
bool have_mpi(std::string* why = nullptr);
// True when the process was started by mpirun (Open MPI's environment), so that MPI_Init makes
// a multi-rank world.
bool launched_by_mpirun();

// Initialises MPI (thread level funneled) once per process; MPI_Finalize runs when the last
// transport is destroyed. `max_tag`: the largest message tag the caller will use (checked
// against MPI_TAG_UB). Throws TransportError when the MPI plugin cannot be loaded, naming why.
std::unique_ptr<Transport> make_mpi_transport(int max_tag);

}  // namespace optpipe::runtime
