// Memory energy bound: a stage's activation memory as a cumulative resource of a few "tokens",
// with energetic reasoning over time windows (Lopez, Erschler & Esquirol, "Ordonnancement de
// tâches sous contraintes : une approche énergétique", RAIRO-APII 26(6), 1992; Baptiste, Le Pape
// & Nuijten, "Constraint-Based Scheduling", Kluwer 2001, §3.3).
//
// Tokens. On stage s's device, cap = limit - static (+ the 1-byte tolerance). A microbatch j of
// s holds at least hold_f bytes (memory_precedence.h) at every instant between F(s, j)'s start
// and B(s, j)'s end, except while fully offloaded (from its offload's end to its reload's
// start): its F allocates the activation, only an offload's end or B's end remove any, and an
// offload at level r < 1 leaves (1 - r)·activation >= hold_f. Memory never exceeds cap (only
// additions add, and each is checked), so at most c = floor(cap / hold_f) microbatches of s are
// "holders" at any instant.
//
// Occupancy. Between F(s, j)'s start and B(s, j)'s end lie F, B, and the chain F(s+1, j) ...
// B(s+1, j) with its comms (lat[s], the static latency), so a microbatch that is not fully
// offloaded holds a token for at least F + lat + B (or F + max(lat, r·(offload + reload)) + B at
// level r, its B waiting for its reload); one fully offloaded holds it from F's start to its
// offload's end and from its reload's start to B's end, at least F + offload + reload + B. So
// each microbatch not yet at F holds a token at least occ = F + B + min(lat, offload + reload)
// (lat alone when it cannot offload fully; its decided level when its F is listed) -- all of it
// after its F's head. A microbatch whose F started and whose B has not ended holds, after a time
// t1 >= the node's time: until B's end if it is not fully offloaded (B's end >= its finish);
// if fully offloaded, until its offload's end and again from its reload's start to B's end
// (at least reload + B, all after the offload's end).
//
// Energy. For a window [t1, T - q], every microbatch's occupancy inside it is at least its
// occupancy, minus what can lie before t1 (none for a started one, counted from t1 on; at most
// t1 - the head of its F for one not started, whose occupancy begins at its F's start), minus
// what can lie after T - q (B(s, j) ends by T - tail(B(s, j)), so at most q - that tail when
// positive). The tokens give Σ inside <= c·(T - q - t1): T >= t1 + Σ / c + q. The windows start
// at the node's time and at the heads of the first 8 forwards of s not started, and end at T
// minus the tail of B or W of one of the last three microbatches.
//
// W executions. A microbatch between its B's end and its W's end holds exactly M_W. Let n1 be
// the holders and n2 the microbatches between B and W at an instant, and g = c - n1max with
// n1max the most holders that fit beside one of the latter (hold_f·n1max + M_W <= cap,
// bound_problem.cc). Then n1 + g·[n2 >= 1] <= c at every instant (n2 >= 1 forces n1 <= n1max).
// While W(s, j) runs, microbatch j is between its B and W, and the W of s run one at a time on
// the device's stream, so the time with n2 >= 1 inside a window is at least Σ_j of W(s, j)'s
// execution inside it: W long, after B(s, j)'s end (>= its finish), ending by T - tail(W(s, j)).
// So a window also holds gamma = g / c token units per unit of W execution inside it. (The
// weight beta of each microbatch between B and W, n1/c + beta·n2 <= 1, is never more than
// gamma: n2 = 1 fits beside n1max holders. On offload-slow-pcie-4x8, 2 tokens of 1.4 GiB in
// 4 GiB and M_W = 1.3 GiB: beta = 1/4, gamma = 1/2: a resident microbatch costs its whole
// F-start-to-W-end time in tokens, as two activations and an M_W do not fit.)
//
// Deficits. A microbatch is active from its F's start to the end of its last op (W, or B when
// unsplit); n1 + n2 <= k, the number active, so at most cap(k) = min(c, k + max(0, g - 1))
// (0 for k = 0) tokens are in use. Left: in [t1, ...) the active ones are those started and not
// ended by t1, plus each forward not started once its head passed; until cap reaches c, the
// window loses d_left = ∫ (c - cap) on [t1, h_left). Right: microbatch j is active at t only if
// t < T - tail(its last op); with u = T - t, on u in [q, u_right) the same count gives d_right.
// Then c·(T - q - t1) >= Σ inside + d_left + d_right, provided each region lies in the window
// and the two do not overlap: h_left <= T - q, T - u_right >= t1 and h_left <= T - u_right.
// Those are checked against lower bounds on T (the window's bound without deficits, the best
// value so far, the finish + static tail of the forward that ends the left region) and against
// the finish of the op whose tail ends the right region (T - that tail >= its end >= its
// finish); a deficit whose condition is not shown is left out.
//
// The code is the OPTPIPE_HD core memory_energy_bound_core (memory_energy_bound_core.h), shared
// with the batched bounds; memory_energy_bound below wraps it (its prefix-sum scratch, m + 1
// doubles, is the caller's there: memory_energy_scratch_doubles).
//
// Complexity: O(S·m) per node: per stage 9 left ends, each O(m) (prefix sums of the
// microbatches' parts), and 6 right ends each O(microbatches whose tail is below q) plus O(c)
// for the deficits; O(m) for a stage whose most optimistic window cannot beat the caller's
// other bounds.
#pragma once

#include <vector>

#include "bounds/bound_problem.h"
#include "bounds/node_transfers.h"

namespace optpipe {

// The largest energy bound over the stages under memory pressure. `head`, `finish` and
// `offload_lb` come from compute_heads with the same `transfers` (null: nothing decided; then
// `offload_lb` is not read).
// `enough`: the caller's other bound; a stage that cannot exceed it is skipped (the result is
// then a value <= max(enough, the true bound), never above the true bound).
double memory_energy_bound(const BoundProblem& problem, const NodeTimes& node, const NodeTransfers* transfers,
                           const std::vector<double>& head, const std::vector<double>& finish,
                           const std::vector<double>& offload_lb, double enough = 0.0);

}  // namespace optpipe
