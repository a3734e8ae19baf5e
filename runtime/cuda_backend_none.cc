// The CUDA/NCCL backend for builds without nvcc, NCCL or MPI.
#include <cstdlib>
#include <stdexcept>

#include "runtime/cuda_backend.h"

namespace optpipe::runtime {

bool have_cuda_backend() { return false; }

int local_rank() {
  const char* v = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  return v ? std::atoi(v) : 0;
}

std::unique_ptr<DeviceBackend> make_cuda_backend(int) {
  throw std::runtime_error("this build has no CUDA/NCCL executor backend (it needs nvcc, NCCL and MPI at configure time)");
}

std::unique_ptr<Transport> make_nccl_transport(DeviceBackend&, int, int, int) {
  throw std::runtime_error("this build has no NCCL transport (it needs nvcc, NCCL and MPI at configure time)");
}

}  // namespace optpipe::runtime
