// Host and device core (hd.h) of compute_heads (heads.h, which documents the rules): plain
// arrays, the caller's scratch, no allocation. compute_heads (heads.cc) wraps it for the scalar
// search; the batched bounds (kernels/batched_bounds_impl.h) call it per node.
#pragma once

#include "bounds/bound_view.h"
#include "bounds/hd.h"
#include "bounds/memory_precedence_core.h"

namespace optpipe {

// Scratch doubles compute_heads_core needs per node: 2·S·m (offload / reload lower bounds, used
// when the caller passes none) + 2·S (the stages' offload / reload chains) + 3·m (rule F).
OPTPIPE_HD inline int heads_scratch_doubles(const BoundProblemView& p) {
  return 2 * p.S * p.m + 2 * p.S + forward_memory_scratch_doubles(p);
}

// Settles op (type, s, j): its known end, or head = max(earliest, device free) and finish =
// head + duration.
OPTPIPE_HD inline void heads_settle(const BoundProblemView& p, const double* end, const double* device_free,
                                    double* head, double* finish, int type, int s, int j, double earliest) {
  const int o = p.op(type, s, j);
  const double e = end[o];
  if (e == e) {
    finish[o] = e;
    return;
  }
  const double h = hd::max(earliest, device_free[p.device_of[s]]);
  head[o] = h;
  finish[o] = h + p.dur[type * p.S + s];
}

// F(s, j): after F(s-1, j) + comm, F(s, j-1), and the memory rule F (`off_lb`: the offload
// lower bounds so far, with `nt`).
OPTPIPE_HD inline void heads_forward(const BoundProblemView& p, const double* end, const double* device_free,
                                     const NodeTransfersView* nt, double* head, double* finish,
                                     const double* off_lb, double* memory_scratch, int s, int j) {
  const int o = p.op(0, s, j);
  if (end[o] == end[o]) {
    finish[o] = end[o];
    return;
  }
  double r = 0;
  if (s > 0) r = finish[p.op(0, s - 1, j)] + p.comm_after[s - 1];
  if (j > 0) r = hd::max(r, finish[p.op(0, s, j - 1)]);
  const double enough = hd::max(r, device_free[p.device_of[s]]);
  r = hd::max(r, forward_memory_head_core(p, finish, s, j, nt, nt ? off_lb : nullptr, enough, memory_scratch));
  heads_settle(p, end, device_free, head, finish, 0, s, j, r);
}

// The offload of F(s, j), when decided (level above 0), after F(s, j): lower bounds on the end
// of its offload and of its reload, into off_lb and rel_lb [sj] and the stage's chains (the
// end of its last offload / reload so far, FIFO per stage).
OPTPIPE_HD inline void heads_transfers(const BoundProblemView& p, const double* end, const NodeTransfersView& nt,
                                       const double* finish, double* off_lb, double* rel_lb, double* off_chain,
                                       double* rel_chain, int s, int j) {
  const int sj = s * p.m + j;
  const double level = nt.level[sj];
  if (!(level > 0)) return;
  const int g = p.group_of_device[p.device_of[s]];
  double e = nt.offload_end[sj];
  if (!(e == e)) e = hd::max(hd::max(finish[p.op(0, s, j)], off_chain[s]), nt.d2h_free[g]) + level * p.offload_time[s];
  off_lb[sj] = off_chain[s] = e;
  double re = nt.reload_end[sj];  // known once the reload started
  if (!(re == re)) {
    // Rule R (memory_precedence.h): room for it at its start. Later forwards of s already
    // started and not fully offloaded hold their unoffloaded part then.
    double extra = 0;
    for (int i = j + 1; i < p.m && end[p.op(0, s, i)] == end[p.op(0, s, i)]; ++i) {
      if (nt.level[s * p.m + i] < 1.0) extra += (1.0 - nt.level[s * p.m + i]) * p.activation[s];
    }
    double start = hd::max(hd::max(e, rel_chain[s]), nt.h2d_free[g]);
    start = hd::max(start, reload_start_with_offloading_core(p, nt, end, finish, s, j, extra, start));
    re = start + level * p.reload_time[s];
  }
  rel_lb[sj] = rel_chain[s] = re;
}

// B(s, j): after F(s, j), B(s+1, j) + comm, B(s, j-1), W(s, j - lag_wb) (memory rule B, at a
// node also with the later forwards that hold memory) and the reload of (s, j) (`rel_lb`, with
// `nt`).
OPTPIPE_HD inline void heads_backward(const BoundProblemView& p, const double* end, const double* device_free,
                                      const NodeTransfersView* nt, double* head, double* finish,
                                      const double* rel_lb, int s, int j) {
  double r = finish[p.op(0, s, j)];
  if (s + 1 < p.S) r = hd::max(r, finish[p.op(1, s + 1, j)] + p.comm_after[s]);
  if (j > 0) r = hd::max(r, finish[p.op(1, s, j - 1)]);
  const int k = p.lag_wb[s];
  if (k > 0 && j >= k && p.types == 3) r = hd::max(r, finish[p.op(2, s, j - k)]);
  if (nt) {
    const double re = rel_lb[s * p.m + j];
    if (re == re) r = hd::max(r, re);
    r = hd::max(r, backward_memory_head_core(p, finish, end, *nt, s, j));
  }
  heads_settle(p, end, device_free, head, finish, 1, s, j, r);
}

// W(s, j): after B(s, j) and W(s, j-1).
OPTPIPE_HD inline void heads_weight_grad(const BoundProblemView& p, const double* end, const double* device_free,
                                         double* head, double* finish, int s, int j) {
  double r = finish[p.op(1, s, j)];
  if (j > 0) r = hd::max(r, finish[p.op(2, s, j - 1)]);
  heads_settle(p, end, device_free, head, finish, 2, s, j, r);
}

// compute_heads on plain arrays. `end` [op] and `device_free` [d]: the node's times (NodeTimes);
// `nt` (null: none) its transfers. Writes head [op] (NaN for started ops) and finish [op]; with
// `nt`, offload_lb and reload_lb [sj] (either may be null: then they live in `scratch`).
// `scratch`: heads_scratch_doubles(p) doubles.
OPTPIPE_HD inline void compute_heads_core(const BoundProblemView& p, const double* end, const double* device_free,
                                          const NodeTransfersView* nt, double* head, double* finish,
                                          double* offload_lb, double* reload_lb, double* scratch) {
  const double nan = hd::nan();
  const int ops = p.num_ops();
  for (int o = 0; o < ops; ++o) {
    head[o] = nan;
    finish[o] = 0.0;
  }
  const int sm = p.S * p.m;
  double* off_lb = offload_lb ? offload_lb : scratch;
  double* rel_lb = reload_lb ? reload_lb : scratch + sm;
  double* off_chain = scratch + 2 * sm;  // [s]: end of the stage's last offload / reload so far
  double* rel_chain = off_chain + p.S;
  double* memory_scratch = rel_chain + p.S;
  if (nt) {
    for (int k = 0; k < sm; ++k) off_lb[k] = rel_lb[k] = nan;
    for (int s = 0; s < p.S; ++s) off_chain[s] = rel_chain[s] = 0.0;
  }
  // Microbatch by microbatch, so that the memory precedences (which point to earlier
  // microbatches) are settled before they are read.
  for (int j = 0; j < p.m; ++j) {
    for (int s = 0; s < p.S; ++s) {
      heads_forward(p, end, device_free, nt, head, finish, off_lb, memory_scratch, s, j);
      if (nt) heads_transfers(p, end, *nt, finish, off_lb, rel_lb, off_chain, rel_chain, s, j);
    }
    for (int s = p.S - 1; s >= 0; --s) heads_backward(p, end, device_free, nt, head, finish, rel_lb, s, j);
    if (p.types < 3) continue;
    for (int s = 0; s < p.S; ++s) heads_weight_grad(p, end, device_free, head, finish, s, j);
  }
}

}  // namespace optpipe
