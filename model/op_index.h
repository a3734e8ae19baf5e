// The index of a compute op in the per-op arrays, shared by the simulator (model/simulator.h,
// Simulator::op_id), the bounds (bounds/bound_problem.h, bounds/bound_view.h) and, through the
// bounds' host and device cores (bounds/hd.h), the batched kernels (kernels/).
//
// Op (type, s, j), for type F = 0, B = 1, W = 2 (OpType), stage s < S and microbatch j < m, has
// index (type * S + s) * m + j: type-major, then stage, then microbatch. So the ops of one type and
// stage are m consecutive entries in microbatch order (the FIFO order on their device), and an
// array over every op has 3 * S * m entries. Pairs (stage, microbatch) are indexed s * m + j, the
// same layout without the type.
//
// The function is constexpr and, under nvcc, __host__ __device__, so device code may call it.
// It includes nothing: the model stays free of the bounds, and nvcc (C++17) reads it as is.
#pragma once

namespace optpipe {

#if defined(__CUDACC__)
__host__ __device__
#endif
constexpr inline int op_index(int S, int m, int type, int s, int j) {
  return (type * S + s) * m + j;
}

}  // namespace optpipe
