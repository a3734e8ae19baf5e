// One source for host and device: functions marked OPTPIPE_HD are compiled for the CPU by the
// C++ compiler and, inside .cu files, for the GPU by nvcc (__host__ __device__). They take plain
// pointers and caller-provided scratch (no allocation, no exceptions, no std containers), so the
// scalar solver path and the batched kernels (kernels/batched_bounds.h) run the same code.
#pragma once

#if defined(__CUDACC__)
#define OPTPIPE_HD __host__ __device__
#else
#define OPTPIPE_HD
#endif

namespace optpipe::hd {

OPTPIPE_HD inline double max(double a, double b) { return a < b ? b : a; }
OPTPIPE_HD inline double min(double a, double b) { return b < a ? b : a; }
OPTPIPE_HD inline bool known(double x) { return x == x; }  // not NaN

}  // namespace optpipe::hd
