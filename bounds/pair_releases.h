// Pair releases: when B(s, j) and B(s, k), k = j + 1, can start at the earliest, given the ends
// of F(s, j) and F(s, k), through the stages after s. The single-stage relaxation
// (single_stage_relaxation.h) otherwise gives each B(s, j) only its own chain, F(s, j)'s end +
// latency[s] (bound_problem.h), as if the later devices ran each microbatch alone.
//
// Argument. In every schedule of the spec, each later stage t = s+1..S-1 runs on its device one
// op at a time, F(t, j) before F(t, k) and B(t, j) before B(t, k) (FIFO per stage and type), and
// each microbatch's chain in order (F(t, j) after F(t-1, j) + comm, B(t, j) after B(t+1, j) +
// comm, the last stage's B after its own F). So on each stage t, B(t, j) runs either before
// F(t, k) or after it. If it runs before at t, it runs before at every later stage t' too:
// B(t', j) ends before B(t, j) starts, which is before F(t, k) and so before F(t', k). The
// schedule therefore follows one of the orders "B(t, j) before F(t, k) exactly for t >= tau",
// tau = s+1..S (S: never), and its times satisfy that order's precedences: they are at least
// the longest paths from the two sources x = F(s, j)'s end + comm and y = F(s, k)'s end + comm
// (the earliest starts of F(s+1, j) and F(s+1, k)). Longest paths are max-plus linear in the
// sources, so each order gives
//     B(s, j) starts >= max(x + aj, y + bj),   B(s, k) starts >= max(x + ak, y + bk)
// with constants per order (the comm back to s included). Ops of other microbatches, memory,
// transfers and other stages sharing a device are ignored, which only lowers the paths. The
// relaxation branches over the orders whose release pair is not dominated by another's: every
// spec schedule is a point of one branch. (After B(s, j) has started, F(s, k) comes later on
// the device and no order makes a difference: the pair adds nothing then.)
//
// Why it matters: on offload-slow-pcie-4x8 the first stage's relaxation spaces its forwards by
// about one W more than the latency needs, and the later devices cannot run two microbatches
// that close without one waiting: with the pair releases the root relaxation is 338.82 (free
// model; CP-SAT's free-timing optimum of the whole instance) and 341.92 under the spec's start
// rules, the proven optimum, instead of 334.58 (bench/README.md).
//
// Checked against a brute force over every order of the two microbatches' ops on every later
// device (tests/pair_releases_test.cc).
//
// Complexity: pair_release_orders is O(S^2) per order, O(S^3) in all, once per stage;
// pair_releases is O(orders) = O(S).
#pragma once

#include <vector>

#include "bounds/bound_problem.h"

namespace optpipe {

// One order's constants (see above): B(s, j) >= max(x + aj, y + bj), B(s, k) >= max(x + ak, y + bk).
struct PairOrder {
  double aj = 0, bj = 0, ak = 0, bk = 0;
};

// The orders of stage s's pair through the stages after it, tau = s+1..S in turn (empty for the
// last stage). -inf where a source does not reach a B.
std::vector<PairOrder> pair_release_orders(const BoundProblem& problem, int s);

struct PairRelease {
  double j = 0, k = 0;  // lower bounds on the starts of B(s, j) and B(s, k)
};

// The release pairs of `orders` for F(s, j) ending at fj and F(s, k) at fk (comm: the comm
// after stage s), each at least `floor_j` / `floor_k`, without the dominated ones (a pair no
// smaller anywhere than another): written to `out`, at most orders.size() of them.
void pair_releases(const std::vector<PairOrder>& orders, double comm, double fj, double fk, double floor_j,
                   double floor_k, std::vector<PairRelease>& out);

}  // namespace optpipe
