// What the lower bounds need to know about an instance and about one search node, as plain
// arrays (the layout the batched GPU bounds of a later issue will read).
//
// Ops are indexed like the simulator's (model/op_index.h): op = (type * S + s) * m + j for type
// F=0, B=1, W=2. Pairs (stage, microbatch) are indexed sj = s * m + j, like the simulator's
// transfer arrays.
#pragma once

#include <vector>

#include "model/instance.h"
#include "model/op_index.h"

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

  // Memory of stage s (memory_precedence.h). room = limit - static - activation of its device
  // (plus the simulator's tolerance): what earlier microbatches of s may hold while F(s, j) or
  // B(s, j) holds its own activation; NaN when s has no activation or none fits at all.
  std::vector<double> activation;    // [s]: bytes (M_B)
  std::vector<double> room;          // [s]
  std::vector<double> hold_f;        // [s]: least bytes a microbatch holds between its F and B
                                     //      unless fully offloaded: (1 - r2)·activation, r2 the
                                     //      largest offload level below 1 (0 if not offloadable)
  std::vector<double> hold_w;        // [s]: bytes held between B and W (M_W; 0 unsplit)
  std::vector<double> offload_release;  // [s]: full-offload (level 1) time, or +inf when it cannot offload all
  // B(s, j) cannot start before W(s, j - lag_wb[s]) ended (0: no such constraint).
  std::vector<int> lag_wb;           // [s]
  // Memory tokens (memory_energy_bound.h): at most tokens[s] microbatches of s hold >= hold_f
  // at once (0 without memory rule); latency[s]: the shortest time from F(s, j)'s end to
  // B(s, j)'s start along the dependencies (F chain up, B chain back, comms).
  std::vector<int> tokens;           // [s]
  std::vector<double> token_w_weight;  // [s]: weight of a W execution of s, in tokens (see there)
  std::vector<int> token_w_extra;      // [s]: max(0, g - 1), g = tokens·token_w_weight (see there)
  std::vector<double> latency;       // [s]
  // Offload transfers (reload_bound.h, channel_bound.h).
  std::vector<double> offload_time, reload_time;  // [s]: whole-activation D2H / H2D times (0: not offloadable)
  std::vector<int> group_of_device;  // [d]: PCIe group index 0..G-1
  int G = 0;
  // Static tails of every op: the longest chain of precedences (dependencies, FIFO order and the
  // memory precedences that hold in every schedule) from its end to the makespan.
  std::vector<double> op_tails;      // [op]

  explicit BoundProblem(const Instance& instance);
  int op(int type, int s, int j) const { return op_index(S, m, type, s, j); }
  int num_ops() const { return 3 * S * m; }
  // Tail of op (type, s, j): a lower bound on makespan - its end in every feasible completion;
  // includes the later ops of its stage and type, which run after it on the same device in FIFO
  // order, and the memory precedences (bound_problem.cc).
  double op_tail(int type, int s, int j) const { return op_tails[op(type, s, j)]; }
};

// Per-node times.
struct NodeTimes {
  std::vector<double> end;           // [op]: end of an op that started (done or running); NaN if not
  std::vector<double> device_free;   // [d]: no op not yet started on d can start before this
  double makespan_so_far = 0;        // latest end among the ops that started
};

// The head of F(s, 0) in `head` [op] (the root's heads, as the search computes them), or, where
// `head` is empty or NaN there, the static chain of the forwards before it with their comms.
double first_forward_head(const BoundProblem& p, const std::vector<double>& head, int s);

}  // namespace optpipe
