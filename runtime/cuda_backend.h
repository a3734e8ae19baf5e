// The CUDA/NCCL backend of the executor (issue 7), for H100 pipelines: one MPI rank per GPU, on
// one node or many.
//   - device side (DeviceBackend, device_backend.h): buffers in device memory (cudaMalloc),
//     offload buffers in pinned host memory (cudaHostAlloc); the model computes on one compute
//     stream (the cuBLAS MLP, mlp_model_cuda.h); offloads and reloads are cudaMemcpyAsync on
//     their own D2H and H2D streams, the D2H copy ordered after the compute that produced the
//     activation by an event; the executor's copy threads wait for each copy to complete.
//   - messages (Transport, transport.h): ncclSend / ncclRecv of bytes. Every (kind, stage
//     boundary) pair -- the activations from stage s to s + 1, the gradients back -- has its own
//     communicator and stream, on which both ends issue their operations in microbatch order
//     (FIFO per stage), so the executor's up-front receives cannot cross-match or deadlock; a
//     send's stream waits for the compute stream's work so far (an event). The communicators are
//     bootstrapped over MPI (ncclGetUniqueId on rank 0, MPI_Bcast), and the control messages
//     (gather, broadcast, abort) go over MPI. A wait polls the operation's event against its
//     deadline and checks ncclCommGetAsyncError.
// Every CUDA, NCCL and MPI status is checked and becomes an error naming the call. The backend
// and the NCCL transport live in the CUDA plugin (plugins/cuda_plugin.h; cuda_backend.cc, built
// into liboptpipe_cuda.so when nvcc and NCCL are found); the functions below load it on first
// need (cuda_backend_via_plugin.cc) and throw, saying what is missing, when it cannot be loaded
// or was built without NCCL.
// It has not run yet: no GPU was available where it was written; the CPU backend runs the same
// executor core in the tests.
#pragma once

#include <memory>
#include <string>

#include "runtime/device_backend.h"
#include "runtime/transport.h"

namespace optpipe::runtime {

// True when the CUDA plugin loads and has the CUDA/NCCL backend; otherwise `*why` says why not.
bool have_cuda_backend(std::string* why = nullptr);
// This rank's index among the ranks on its node (Open MPI's OMPI_COMM_WORLD_LOCAL_RANK, else 0).
int local_rank();
// The backend on GPU `device % device count`.
std::unique_ptr<DeviceBackend> make_cuda_backend(int device);
// The NCCL transport over `backend`'s compute stream (which must be a CUDA backend's), for an
// instance of `stages` stages and `microbatches` microbatches (its message tags: program.h); its
// control messages (the NCCL bootstrap, gather, broadcast, abort) go over `control`, the MPI
// transport (make_mpi_transport). Collective: every rank calls it.
std::unique_ptr<Transport> make_nccl_transport(DeviceBackend& backend, std::unique_ptr<Transport> control, int stages,
                                               int microbatches);

}  // namespace optpipe::runtime
