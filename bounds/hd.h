// One source for host and device: functions marked OPTPIPE_HD are compiled for the CPU by the
// C++ compiler and, inside .cu files, for the GPU by nvcc (__host__ __device__). They take plain
// pointers and caller-provided scratch (no allocation, no exceptions, no std containers), so the
// scalar solver path and the batched kernels (kernels/batched_bounds.h) run the same code.
//
// Bit-for-bit equality of host and device needs the same rounding: nvcc contracts a*b + c into
// one fused multiply-add by default, so the kernels build with -fmad=false (kernels/CMakeLists.txt).
#pragma once

#if defined(__CUDACC__)
#define OPTPIPE_HD __host__ __device__
#else
#define OPTPIPE_HD
#endif

// OPTPIPE_HD, and always inlined: for a large helper a core is split into (e.g. the window loops
// of memory_energy_bound_core.h), which the compiler would keep out of line. Inlined, the state
// the helpers share (a struct of the core's locals) stays in registers as the core's own locals
// would; out of line, the helper reads it through a pointer, and memory_energy_bound_core ran
// 10% more instructions so (callgrind). Helpers the compiler inlines anyway stay plain
// OPTPIPE_HD inline (forcing those measured no better). GCC, Clang and nvcc (whose
// __forceinline__ is this attribute) accept it.
#define OPTPIPE_HD_INLINE OPTPIPE_HD inline __attribute__((always_inline))

namespace optpipe::hd {

// Same results as std::max / std::min of two doubles (the first argument on ties).
OPTPIPE_HD inline double max(double a, double b) { return a < b ? b : a; }
OPTPIPE_HD inline double min(double a, double b) { return b < a ? b : a; }
OPTPIPE_HD inline int max(int a, int b) { return a < b ? b : a; }
OPTPIPE_HD inline int min(int a, int b) { return b < a ? b : a; }
OPTPIPE_HD inline bool known(double x) { return x == x; }  // not NaN
OPTPIPE_HD inline double inf() { return __builtin_huge_val(); }
OPTPIPE_HD inline double nan() { return __builtin_nan(""); }

}  // namespace optpipe::hd
