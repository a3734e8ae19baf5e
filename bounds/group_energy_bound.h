// PCIe group energy bound: the memory energy of each stage (memory_energy_bound.h) together with
// the D2H and H2D channels its offloads must use, which the devices of a PCIe group share
// (spec §1, §4). A root bound (no decision taken): the existing energy bound lets every
// microbatch offload for free, and the channel bound (channel_bound.h) is 0 at the root, where
// no offload level is decided; neither sees that memory pressure forces offloads that the shared
// channels cannot carry.
//
// Relaxation (this project; energetic reasoning as in Lopez, Erschler & Esquirol, RAIRO-APII
// 26(6), 1992, with the channel as a second resource whose demand trades against the first).
// Stage s under memory pressure has c tokens (bound_problem.h: at most c microbatches hold
// hold_f at once). A microbatch that is not fully offloaded holds a token from F's start to B's
// end, at least occ0 = F + lat + B (lat: the pipeline above s and back); one fully offloaded
// (level 1) holds it at least occ1 = F + offload + reload + B, and uses its group's D2H channel
// for `offload` and its H2D channel for `reload`. Every F(s, j) starts no earlier than h_s (the
// head of F(s, 0)) and the W executions weigh gamma tokens each (memory_energy_bound.h), so with
// X_s full offloads a makespan T needs
//     (m - X_s)·occ0 + X_s·occ1 + gamma·m·W <= c·(T - h_s),                       (energy)
// so X_s >= x_s(T) = ceil(max(0, (m·occ0 + gamma·m·W - c·(T - h_s)) / (occ0 - occ1))), and at
// most m. The offloads of a group's stages run one at a time on its D2H channel: none before the
// earliest F end in the group (e_D), each followed by its reload and B (so all over by T minus the
// smallest reload + B + B's static tail, q_D); likewise its reloads on H2D after the earliest
// offload end (e_H) and before T minus the smallest B + tail (q_H):
//     Σ_s x_s(T)·offload_s <= T - e_D - q_D,   Σ_s x_s(T)·reload_s <= T - e_H - q_H.    (channels)
// Misplaced transfers: a reload is only of use once its B can start, and no B(s, j) starts before
// beta_s = h_s + F + lat; an offload only once its F has ended, and no F(s, j) ends after
// delta_s = T - (lat + B + B's static tail). A reload that ends y before beta_s keeps its token y
// longer than occ1 counts, and so does an offload that starts y after delta_s. The group's H2D
// channel can carry at most T - q_H - beta + R_max of reload work from beta = the least beta_s of
// its reloading stages on (one reload may straddle beta); the rest, W_E, is n >= ceil(W_E / R_max)
// reloads that end by beta, one after another, the i-th from the last ending at least i·R_min
// before beta, together at least R_min·n(n-1)/2 of token-time. Likewise offloads after delta (the
// largest delta_s): beyond what fits before delta + O_max after e_D. Neither extra belongs to
// one stage (which microbatches are early is the schedule's choice), so it is charged to the
// group's summed energy:
//     Σ_s [(m - X_s)·occ0 + X_s·occ1 + gamma·m·W] + extra(X) <= Σ_s c_s·(T - h_s).      (misplaced)
// Reloads too soon after their offloads: a fully offloaded microbatch's B starts no earlier than
// its F's end + lat, so a reload that starts H after its offload's end holds its token at least
// lambda_s - H longer than occ1 counts (lambda_s = lat - offload - reload = occ0 - occ1), or its
// offload waited that long after F: the extra is at least max(0, lambda - H). The group's i-th
// full offload (1..X) ends no earlier than e_D + i·O_min (one at a time on D2H), and its reloads,
// one at a time on H2D, all end by T - q_H, so the k-th reload to start does so by
// T - q_H - (X - k + 1)·R_min. Matching offloads and reloads in the same order is the cheapest
// (the cost is convex in the difference), so together at least
//     Σ_{k=1..X} max(0, e_D + k·O_min + lambda_min - (T - q_H) + (X - k + 1)·R_min)
// of token-time; and, with each microbatch's own stage's lambda_s and no term clipped at 0 (the
// positions in either order sum to X(X+1)/2), at least
//     X·(e_D - (T - q_H)) + (O_min + R_min)·X(X+1)/2 + Σ_s X_s·lambda_s,
// the larger of the two, which the group's summed energy must pay:
//     Σ_s [(m - X_s)·occ0 + X_s·occ1 + gamma·m·W] + lag(X) <= Σ_s c_s·(T - h_s).           (lag)
// Where the group's D2H is busy almost throughout (bench-gpt3-28.3b-32x128-2act), the last
// offloads cannot be followed by their reloads in time without holding memory: the drain.
// (lag) and (misplaced) may charge the same waiting, so each is checked on its own.
// More offloads than x_s(T) lower the left side's energy but add channel work, so every count
// vector X >= x(T) (each up to m) is tried; with more than 2^15 of them the check is skipped
// (which only weakens the bound). On GPT-3 14.6B 16 x 64 at 2 activations, where every microbatch
// of stages 1-14 must go out and back, the reloads cannot start in earnest before the first
// B's, about 118 ms in (bench/README.md, "The solver at scale").
// Partial offloads (levels below 1) keep their token and only add channel time, so leaving them
// out is a relaxation. Every constraint gets easier as T grows, so the smallest feasible T over
// each group is found by bisection (to 1e-9 relative), and the bound is the largest over the
// groups; a stage that cannot fit even with every microbatch offloaded makes the bound the
// energy of that alone.
//
// Validity: every spec schedule with makespan T satisfies (energy) for each stage with its own
// count of full offloads X_s (the tokens, occupancies and window are those of
// memory_energy_bound.h with t1 = h_s and q = 0), and its group's transfers satisfy (channels),
// (misplaced) and (lag) with those counts; x_s(T) <= X_s. So T is feasible above and the bound
// is at most T.
//
// Complexity: O(G·log(1/eps)) bisection steps, each O(S) plus up to 2^15 count vectors of
// O(S + X), X <= S·m their full offloads.
#pragma once

#include <vector>

#include "bounds/bound_problem.h"

namespace optpipe {

// The bound at the root, with `head` [op] the root's heads (empty, or NaN for an op: the static
// chain of forwards is used). 0 when no group has a stage under memory pressure that offloading
// could relieve.
// misplaced = false: without the misplaced transfers' cost; reload_lag = false: without the
// reloads' lag (both for comparisons).
double group_energy_bound(const BoundProblem& problem, const std::vector<double>& head, bool misplaced = true,
                          bool reload_lag = true);

// The same by enumeration, for the tests: for every vector of full-offload counts (one per stage
// of the group, 0..m each) the least T each constraint allows (the misplaced one by doubling and
// bisection), the largest of those; the least over the vectors; the largest over the groups.
// Exponential: groups of few stages only.
double group_energy_bound_by_enumeration(const BoundProblem& problem, const std::vector<double>& head);

}  // namespace optpipe
