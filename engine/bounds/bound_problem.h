// What the lower bounds need to know about an instance and about one search node, as plain
// arrays (the layout the batched GPU bounds of a later issue will read).
//
// Ops are indexed like the simulator's: op = (type * S + s) * m + j for type F=0, B=1, W=2.
#pragma once

#include <vector>

#include "engine/instance.h"

namespace optpipe {

// Per-instance constants.
struct BoundProblem {
  int D = 0, S = 0, m = 0;
  int types = 3;                     // 3 with a split backward, 2 without (no W)
  std::vector<int> device_of;        // [s]
  std::vector<double> dur;           // [type*S + s]
  std::vector<double> comm_after;    // [s]: comm between s and s+1 (0 on one device)
  std::vector<double> tail;          // [type*S + s]: shortest time from the op's end to the makespan
                                     // along its successors of other types (see bound_problem.cc)
  // Memory precedences (heads.h): F(s, j) cannot start before microbatch j - lag_b[s] has
  // released its activation (its B ended or, if the stage can offload all of it, its offload
  // could have ended: F end + offload_release[s]), nor before W(s, j - lag_w[s]) ended. A lag of
  // 0 means no such constraint.
  std::vector<int> lag_b, lag_w;     // [s]
  std::vector<double> offload_release;  // [s]: full-offload time, or +inf when it cannot offload all

  explicit BoundProblem(const Instance& instance);
  int op(int type, int s, int j) const { return (type * S + s) * m + j; }
  int num_ops() const { return 3 * S * m; }
  // Tail of op (type, s, j): the static tail plus the later ops of its stage and type, which run
  // after it on the same device in FIFO order: (m-1-j)·dur + tail.
  double op_tail(int type, int s, int j) const { return (m - 1 - j) * dur[type * S + s] + tail[type * S + s]; }
};

// Per-node times.
struct NodeTimes {
  std::vector<double> end;           // [op]: end of an op that started (done or running); NaN if not
  std::vector<double> device_free;   // [d]: no op not yet started on d can start before this
  double makespan_so_far = 0;        // latest end among the ops that started
};

}  // namespace optpipe
