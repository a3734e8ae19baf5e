// Heads: the earliest start of every op that has not started, from the node's known end times,
// the devices' free times and the dependency DAG (F chain, B chain, W after B, and FIFO per
// stage and type) plus the memory precedences of memory_precedence.h (a forward or a backward
// waits for earlier microbatches to release memory), ignoring the other ops of a device.
// Classic job-shop heads (e.g. Carlier & Pinson, "An algorithm for solving the job-shop
// problem", Management Science 35(2), 1989, §2); the one-machine and critical-path bounds read
// them.
//
// With a node's transfers (node_transfers.h), an offloaded microbatch (listed F at level r > 0)
// also waits for its transfers: its offload starts after its F ends, after the previous
// offload of its stage (the D2H channel serves requests in order, and a stage's requests come
// in microbatch order since its F are FIFO on one stream) and after the channel's free time,
// and lasts r·offload; its reload starts after that offload ended, after the previous reload of
// its stage (R is FIFO per stage and the H2D channel serves in request order) and after the
// channel's free time, and lasts r·reload; B(s, j) is ready only when it ended (spec §4). Known
// transfer times replace those lower bounds.
//
// The code is the OPTPIPE_HD core compute_heads_core (heads_core.h), shared with the batched
// bounds; compute_heads below wraps it.
//
// Complexity: O(S·m) plus the memory rule of each forward (O(S·m³) in the worst case, O(S·m)
// without memory pressure).
#pragma once

#include <vector>

#include "bounds/bound_problem.h"
#include "bounds/node_transfers.h"

namespace optpipe {

// Fills `head[op]` for ops not started (NaN for started ones) and `finish[op]` (known end, or
// head + duration) for every op. `transfers` (null: none) adds the node's offload decisions;
// then `reload_lb` (if not null) receives, per sj, the lower bound on the end of the reload of
// an offloaded microbatch (NaN when not offloaded or undecided), and `offload_lb` likewise.
void compute_heads(const BoundProblem& problem, const NodeTimes& node, std::vector<double>& head,
                   std::vector<double>& finish, const NodeTransfers* transfers = nullptr,
                   std::vector<double>* offload_lb = nullptr, std::vector<double>* reload_lb = nullptr);

// The heads [op] at the root of the search: compute_heads at the simulator's first decision,
// as the solver computes them there.
std::vector<double> root_heads(const Instance& instance, const BoundProblem& problem);

}  // namespace optpipe
