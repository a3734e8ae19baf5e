// Memory precedences: when a microbatch's activation needs room that only earlier microbatches
// of the same stage can free, its op waits for their B, W or offload. They turn the device's
// memory limit into time lags between ops (generalised precedence constraints; cf. the
// "minimal time lags" of Brucker, "Scheduling Algorithms", 5th ed., §6.6, and the reservoir
// reasoning of Laborie, "Algorithms for propagating resource constraints in AI planning and
// scheduling", Artificial Intelligence 143(2), 2003), read by heads.h and the static tails of
// bound_problem.cc.
//
// Notation for a stage s on device d: room = limit[d] - static[d] - activation[s] (+ the
// simulator's 1-byte tolerance), hold_f = (1 - r2)·activation (r2: largest offload level below
// 1, 0 if s cannot offload), hold_w = M_W (0 unsplit), off = the full-offload time.
//
// Rule F (forward). Let t be the start of F(s, j). The simulator checks memory + activation <=
// limit at t, after the removals of that instant and before any reload start of it, and other
// stages of d hold >= 0 bytes, so the earlier microbatches j' < j of s hold at most `room`
// together. The stream of d runs one op at a time in list order and each type of s is FIFO, so
// at t: F(s, j') ended for every j' < j; the microbatches whose B ended are a prefix 0..b-1
// (b <= j: B(s, j) needs F(s, j)), those whose W ended a prefix 0..w-1 (w <= b). Then
//   - w <= j' < b holds exactly M_W (its offload and reload, if any, cancel before its B);
//   - b <= j' < j holds act - (offloaded part once its offload ended) >= (1 - r)·act, that is
//     >= hold_f unless its level is 1, and 0 only if its full offload ended by t.
// With o the number of those at 0: hold_w·(b - w) + hold_f·(j - b - o) <= room. The o
// microbatches are fully offloaded, distinct, all >= b, so the k-th of them (by index) ended its
// F no earlier than F(s, b+k-1) did (F is FIFO); offloads run one at a time on the device's D2H
// channel, each after its F, so the last ends no earlier than e_o(b): the end of o back-to-back
// jobs of length off released at the finishes of F(s, b), ..., F(s, b+o-1) in order (the
// earliest-release-first completion, optimal for a common processing time). Hence
//   start F(s, j) >= min over 0 <= w <= b <= j of max(end B(s, b-1), end W(s, w-1), e_o(b))
// with o the least count that satisfies the inequality (none when it needs a full offload the
// stage cannot do, or hold_w·(b - w) > room). Using lower bounds (finish = known end or head +
// duration) for those ends keeps it a lower bound: the expression is nondecreasing in them.
//
// Rule B (lag_wb, bound_problem.cc): during B(s, j) microbatch j holds its whole activation
// (its reload ended before B(s, j) started) and every j' < j has ended its B (FIFO on one
// stream) and holds M_W until W(s, j') ends; memory never exceeds the limit (only additions add
// and each is checked), so at most k = floor(room / M_W) of those are pending: B(s, j) starts
// after W(s, j - k - 1) ended.
//
// At a node, rule B also counts the later microbatches i > j whose F started and whose level is
// below 1: they hold (1 - r_i)·activation until their B, which comes after B(s, j) (FIFO), so
// at most floor((room - extra) / M_W) W are pending at B(s, j)'s start (none fits: +inf, the
// node deadlocks).
//
// Rule R (reload, at a node where (s, i) is offloaded at level r > 0): at the start of its
// reload the simulator checks memory + r·activation <= limit, and (s, i) still holds its
// (1 - r)·activation, so the other microbatches of s hold at most `room` together. Every earlier
// microbatch i' < i whose B has not ended holds its whole activation: at level 0 it never
// released any; offloaded, its reload started before this one (R is FIFO per stage, the H2D
// channel serves in request order, and at equal times the earlier addition comes first). Those
// whose B ended hold M_W until their W ends. (Later microbatches whose F started and that are
// not fully offloaded hold (1 - r')·activation too: `extra` bytes, known at the node.) So with b'
// B ends and w' W ends among 0..i-1 (prefixes): act·(i - b') + M_W·(b' - w') + extra <= room,
// and the reload starts no earlier than min over such (w', b') of max(end B(s, b'-1),
// end W(s, w'-1)); B(s, i) waits for its end (heads.cc). Like rule F without zeroed microbatches.
// A later forward that started at level 1 holds its whole activation until its offload ends
// (its own reload comes after this one); with Z the set of those at 0 by the reload's start,
// the start is at least every offload end in Z and rule R holds with the others added to
// `extra`. For a start x the set of those whose offload lower bound is <= x is the largest
// possible Z, so trying each threshold (none, or one of those lower bounds) and keeping the
// smallest result is a lower bound (reload_start_with_offloading_core).
//
// Forward edges that hold whatever the offloads (only for a stage that cannot offload fully,
// o = 0): hold_f·(j - b) <= room gives B(s, j - ka - 1) before F(s, j), ka = floor(room /
// hold_f); and with u = min(hold_f, hold_w) > 0, u·(j - w) <= room gives W(s, j - ku - 1)
// before F(s, j), ku = floor(room / u). Rule F implies both; the tails use them.
//
// At a node, the decided levels make rule F exact about who can hold 0: the zeroed set only
// has to cover the bytes over `room`, and since the offload ends along the channel's FIFO order
// are nondecreasing in the microbatch, the best zeroed set is a prefix (by index) of those that
// can be zeroed: any other set with the same largest index frees no more bytes earlier.
//
// The rules are OPTPIPE_HD cores (memory_precedence_core.h), shared with the batched bounds; the
// functions below wrap them.
//
// Complexity: forward_memory_head and reload_memory_start are O(j²) for a stage under pressure
// (O(1) otherwise); the reload rule with later offloading forwards runs rule R once per such
// forward, plus once.
#pragma once

#include <vector>

#include "bounds/bound_problem.h"
#include "bounds/node_transfers.h"

namespace optpipe {

// floor(x / unit) for byte counts, rounded up by a relative 1e-9 so that floating-point
// rounding of an exact fit never makes a rule stronger than the simulator's check; -1 for x < 0,
// at most 1e9.
int fit_count(double x, double unit);

// The lags of the forward edges that hold whatever the offloads: F(s, j) starts after
// B(s, j - lag_b) and W(s, j - lag_w) ended (0: none).
void forward_memory_edges(const BoundProblem& problem, int s, int& lag_b, int& lag_w);

// Rule F: a lower bound on the start of F(s, j) from the finishes (known end, or head +
// duration) of the earlier microbatches' F, B and W of stage s; 0 when memory cannot delay it.
// With a node's transfers (node_transfers.h; null: nothing decided), a listed forward holds
// what its level leaves ((1 - r)·activation, or all of it for r = 1 until its offload ended)
// and only one at level 1 whose reload has not started can hold 0; `offload_lb[sj]` must then
// hold a lower bound on the end of the offload of every listed (s, i), i < j, with r > 0 (NaN
// for r = 0; heads.cc computes them along the channel's FIFO order), and the chain of the
// unlisted ones starts no earlier than the last of those nor than the channel's free time.
// `enough`: the caller's other lower bound on that start; the search stops once it has shown the
// rule gives no more (then it returns some value <= enough).
double forward_memory_head(const BoundProblem& problem, const std::vector<double>& finish, int s, int j,
                           const NodeTransfers* transfers = nullptr, const double* offload_lb = nullptr,
                           double enough = 0.0);

// Rule B at a node: a lower bound on the start of B(s, j) from the W finishes of stage s and the
// later forwards of s that started (level < 1); 0 when none delays it.
double backward_memory_head(const BoundProblem& problem, const std::vector<double>& finish, const NodeTimes& node,
                            const NodeTransfers& transfers, int s, int j);

// Rule R: a lower bound on the start of the reload of (s, i) (offloaded at a node) from the
// finishes of the earlier microbatches' B and W; `extra`: bytes that later microbatches of s
// certainly hold then. 0 when memory cannot delay it; +inf when even all released cannot fit.
double reload_memory_start(const BoundProblem& problem, const std::vector<double>& finish, int s, int i,
                           double extra);

}  // namespace optpipe
