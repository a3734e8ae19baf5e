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
// W phases. A microbatch between its B's end and its W's end holds exactly M_W. With weight
// 1/c for a holder before B and beta for one between B and W, beta the largest with
// n1/c + beta·n2 <= 1 for every (n1, n2) with hold_f·n1 + M_W·n2 <= cap (bound_problem.cc),
// the weighted count of the microbatches of s is at most 1 at every instant; so a window also
// holds beta·(W phases inside it): each lasts at least W, starts at B's end (>= its finish) and
// ends by T - tail(W(s, j)).
//
// Complexity: O(S·m) per node (48 windows per stage, O(m) each), and O(m) for a stage whose
// most optimistic window cannot beat the caller's other bounds.
#pragma once

#include <vector>

#include "engine/bounds/bound_problem.h"
#include "engine/bounds/node_transfers.h"

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
