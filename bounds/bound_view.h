// BoundProblem as plain pointers (a POD view) for OPTPIPE_HD bound functions: the same arrays in
// host memory for the scalar path, or copied to device memory for the GPU batch. Only the fields
// the ported bounds read are here (critical path, one machine, heads with the memory rules and
// node transfers, channel, memory energy); the view never owns memory.
#pragma once

#include "bounds/bound_problem.h"
#include "bounds/hd.h"
#include "model/op_index.h"

namespace optpipe {

struct BoundProblemView {
  int D = 0, S = 0, m = 0, types = 3;
  int G = 0;                               // PCIe groups
  const int* device_of = nullptr;          // [s]
  const double* dur = nullptr;             // [type*S + s]
  const double* op_tails = nullptr;        // [op]
  const double* comm_after = nullptr;      // [s]
  // Memory (memory_precedence.h).
  const double* activation = nullptr;      // [s]
  const double* room = nullptr;            // [s]
  const double* hold_f = nullptr;          // [s]
  const double* hold_w = nullptr;          // [s]
  const double* offload_release = nullptr; // [s]
  const int* lag_wb = nullptr;             // [s]
  // Offload transfers.
  const double* offload_time = nullptr;    // [s]
  const double* reload_time = nullptr;     // [s]
  const int* group_of_device = nullptr;    // [d]
  // Memory tokens (memory_energy_bound.h).
  const int* tokens = nullptr;             // [s]
  const double* token_w_weight = nullptr;  // [s]
  const int* token_w_extra = nullptr;      // [s]
  const double* latency = nullptr;         // [s]

  OPTPIPE_HD int op(int type, int s, int j) const { return op_index(S, m, type, s, j); }
  OPTPIPE_HD int num_ops() const { return 3 * S * m; }
  OPTPIPE_HD double op_tail(int type, int s, int j) const { return op_tails[op(type, s, j)]; }
};

// A node's transfers (node_transfers.h) as plain pointers: [sj] arrays, [g] channel free times.
struct NodeTransfersView {
  double now = 0;
  const double* level = nullptr;          // [sj]: NaN before listed
  const double* offload_start = nullptr;  // [sj]
  const double* offload_end = nullptr;    // [sj]
  const double* reload_start = nullptr;   // [sj]
  const double* reload_end = nullptr;     // [sj]
  const double* d2h_free = nullptr;       // [g]
  const double* h2d_free = nullptr;       // [g]
};

inline BoundProblemView view_of(const BoundProblem& p) {
  BoundProblemView v;
  v.D = p.D;
  v.S = p.S;
  v.m = p.m;
  v.types = p.types;
  v.G = p.G;
  v.device_of = p.device_of.data();
  v.dur = p.dur.data();
  v.op_tails = p.op_tails.data();
  v.comm_after = p.comm_after.data();
  v.activation = p.activation.data();
  v.room = p.room.data();
  v.hold_f = p.hold_f.data();
  v.hold_w = p.hold_w.data();
  v.offload_release = p.offload_release.data();
  v.lag_wb = p.lag_wb.data();
  v.offload_time = p.offload_time.data();
  v.reload_time = p.reload_time.data();
  v.group_of_device = p.group_of_device.data();
  v.tokens = p.tokens.data();
  v.token_w_weight = p.token_w_weight.data();
  v.token_w_extra = p.token_w_extra.data();
  v.latency = p.latency.data();
  return v;
}

}  // namespace optpipe
