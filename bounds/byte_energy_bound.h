// Byte-time energy bound: each device's activation memory in bytes over time, with the holding
// of each offload level, and the PCIe channels the offloads use (spec §4). A root bound.
//
// Why besides the PCIe group energy bound (group_energy_bound.h): that one counts tokens per
// stage, each the least a microbatch holds unless fully offloaded, (1 - r2)·activation with r2
// the largest level below 1. With a level of 0.5 a resident microbatch then counts as half of
// what it holds, and two stages of one device (V and loop placements) each get the whole
// device's tokens. Here the bytes are counted as they are held, every stage of a device against
// its one memory: on paper-gpt3-6.2b-v-8x24-2act (levels 0, 0.5 and 1, two stages a GPU) it
// shows what the tokens cannot (bench/README.md, "The mid-size instances").
//
// Relaxation (this project; energetic reasoning as in Lopez, Erschler & Esquirol, RAIRO-APII
// 26(6), 1992, over a whole device and the whole schedule, with the channel as a second
// resource as in group_energy_bound.h). Microbatch j of stage s at offload level r:
//   - keeps (1 - r)·a (a = activation[s]) from F(s, j)'s start to B(s, j)'s end: at least
//     occ0 = F + lat + B (lat: the pipeline above s and back, latency in bound_problem.h);
//   - holds the offloaded r·a from F's start to the offload's end (it starts at F's end and
//     lasts r·offload) and again from the reload's start (r·reload before B at the latest) to B's
//     end: at least F + r·(offload + reload) + B;
//   - and, split, weight_activation (hold_w) at least while W(s, j) runs.
// All of it lies in [h_d, T], h_d the least head of a first forward of the device's stages, so
// with cap_d = limit - static (+ the simulator's tolerance):
//     Σ_{s on d} Σ_j [(1 - r_j)·a·occ0 + r_j·a·(F + r_j·(off + rel) + B)] + Σ_{s on d} m·hold_w·W
//         <= cap_d · (T - h_d).                                                         (memory)
// Level r saves save(r) = r·a·(lat - r·(off + rel)) of byte-time against level 0 and costs its
// group's D2H channel r·off and its H2D channel r·rel. The transfers of a group run one at a time
// in the windows of group_energy_bound.h (offloads after the earliest F end e_D, each followed by
// its reload and B, so over by T - q_D; reloads likewise), so
//     Σ_{s in g} Σ_j r_j·off_s <= T - e_D - q_D,   Σ_{s in g} Σ_j r_j·rel_s <= T - e_H - q_H.   (channels)
// For a T the least D2H time that lets every device of the group meet (memory) is a knapsack
// with one choice of level per microbatch; its LP relaxation (each stage's levels reduced to the
// upper concave hull of (cost, save), then the hull segments by save per cost, each m times) gives
// a lower bound on it, and likewise for H2D with the reload costs. T is infeasible when a device
// cannot meet (memory) even with its best savings, or a channel's least time exceeds its window.
// Every constraint gets easier as T grows: the bound is the least feasible T, by bisection, the
// largest over the groups.
//
// Validity: a spec schedule with makespan T meets (memory) for every device with its own levels
// (the holdings above are lower bounds on what the simulator keeps resident), and (channels) for
// every group; the LP's least channel time is at most the schedule's. So T is feasible, and the
// bound is at most T.
//
// Complexity: O(S·L²) for the hulls and O(S·L log(S·L)) to order their segments (L the offload
// levels), then O(log(1/eps)) bisection steps of O(D + S·L) each.
#pragma once

#include <vector>

#include "bounds/bound_problem.h"
#include "model/instance.h"

namespace optpipe {

// The bound at the root, with `head` [op] the root's heads (empty, or NaN for an op: the static
// chain of forwards is used). 0 when no device's memory binds.
double byte_energy_bound(const Instance& instance, const BoundProblem& problem, const std::vector<double>& head);

}  // namespace optpipe
