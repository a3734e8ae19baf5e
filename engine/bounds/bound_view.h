// BoundProblem as plain pointers (a POD view) for OPTPIPE_HD bound functions: the same arrays in
// host memory for the scalar path, or copied to device memory for the GPU batch. Only the fields
// the ported bounds read are here; the view never owns memory.
#pragma once

#include "engine/bounds/bound_problem.h"
#include "engine/bounds/hd.h"

namespace optpipe {

struct BoundProblemView {
  int D = 0, S = 0, m = 0, types = 3;
  const int* device_of = nullptr;   // [s]
  const double* dur = nullptr;      // [type*S + s]
  const double* op_tails = nullptr; // [op]

  OPTPIPE_HD int op(int type, int s, int j) const { return (type * S + s) * m + j; }
  OPTPIPE_HD int num_ops() const { return 3 * S * m; }
};

inline BoundProblemView view_of(const BoundProblem& p) {
  BoundProblemView v;
  v.D = p.D;
  v.S = p.S;
  v.m = p.m;
  v.types = p.types;
  v.device_of = p.device_of.data();
  v.dur = p.dur.data();
  v.op_tails = p.op_tails.data();
  return v;
}

}  // namespace optpipe
