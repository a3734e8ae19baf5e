#include "engine/bounds/heads.h"

#include <algorithm>
#include <limits>

namespace optpipe {

namespace {

// The earliest time `need` microbatches of stage s can have released their activations: b of
// them by B's end (FIFO: exactly microbatches 0..b-1, by the end of B(s, b-1)) and o = need - b
// others by full offloads. Those others are among microbatches b.. (each counts once), and
// offloads run one at a time on the device's D2H channel, each after its forward: the o-th ends
// no earlier than F(s, b)'s end + o·offload, nor than F(s, b+o-1)'s end + offload. Minimised
// over the split b + o = need.
double memory_release(const BoundProblem& p, const std::vector<double>& finish, int s, int need) {
  const double off = p.offload_release[s];
  const double by_b_only = finish[p.op(1, s, need - 1)];
  if (!(off < std::numeric_limits<double>::infinity())) return by_b_only;
  double best = by_b_only;
  for (int o = 1; o <= need; ++o) {
    const int b = need - o;
    const double offloads = std::max(finish[p.op(0, s, b)] + o * off, finish[p.op(0, s, need - 1)] + off);
    const double bs = b > 0 ? finish[p.op(1, s, b - 1)] : 0.0;
    best = std::min(best, std::max(offloads, bs));
  }
  return best;
}

}  // namespace

void compute_heads(const BoundProblem& p, const NodeTimes& node, std::vector<double>& head,
                   std::vector<double>& finish) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  head.assign(p.num_ops(), nan);
  finish.assign(p.num_ops(), 0.0);
  auto settle = [&](int type, int s, int j, double earliest) {
    const int o = p.op(type, s, j);
    const double e = node.end[o];
    if (e == e) {
      finish[o] = e;
      return;
    }
    const double h = std::max(earliest, node.device_free[p.device_of[s]]);
    head[o] = h;
    finish[o] = h + p.dur[type * p.S + s];
  };
  // Microbatch by microbatch, so that the memory precedences (which point to earlier
  // microbatches) are settled before they are read.
  for (int j = 0; j < p.m; ++j) {
    // F: after F(s-1, j) + comm, F(s, j-1), and the memory precedences.
    for (int s = 0; s < p.S; ++s) {
      double r = 0;
      if (s > 0) r = finish[p.op(0, s - 1, j)] + p.comm_after[s - 1];
      if (j > 0) r = std::max(r, finish[p.op(0, s, j - 1)]);
      if (const int k = p.lag_b[s]; k > 0 && j >= k) r = std::max(r, memory_release(p, finish, s, j - k + 1));
      if (const int k = p.lag_w[s]; k > 0 && j >= k && p.types == 3) r = std::max(r, finish[p.op(2, s, j - k)]);
      settle(0, s, j, r);
    }
    // B: after F(s, j), B(s+1, j) + comm and B(s, j-1).
    for (int s = p.S - 1; s >= 0; --s) {
      double r = finish[p.op(0, s, j)];
      if (s + 1 < p.S) r = std::max(r, finish[p.op(1, s + 1, j)] + p.comm_after[s]);
      if (j > 0) r = std::max(r, finish[p.op(1, s, j - 1)]);
      settle(1, s, j, r);
    }
    if (p.types < 3) continue;
    // W: after B(s, j) and W(s, j-1).
    for (int s = 0; s < p.S; ++s) {
      double r = finish[p.op(1, s, j)];
      if (j > 0) r = std::max(r, finish[p.op(2, s, j - 1)]);
      settle(2, s, j, r);
    }
  }
}

}  // namespace optpipe
