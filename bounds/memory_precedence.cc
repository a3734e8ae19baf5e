#include "bounds/memory_precedence.h"

#include <algorithm>
#include <limits>

#include "bounds/memory_precedence_core.h"

namespace optpipe {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

bool known(double x) { return x == x; }

}  // namespace

int fit_count(double x, double unit) { return fit_count_core(x, unit); }

void forward_memory_edges(const BoundProblem& p, int s, int& lag_b, int& lag_w) {
  lag_b = lag_w = 0;
  const double room = p.room[s];
  if (!known(room) || p.offload_release[s] < kInf) return;
  if (p.hold_f[s] > 0) {
    const int k = fit_count(room, p.hold_f[s]);
    if (k + 1 < p.m) lag_b = k + 1;
  }
  if (p.hold_w[s] > 0 && p.hold_f[s] > 0) {
    const int k = fit_count(room, std::min(p.hold_f[s], p.hold_w[s]));
    if (k + 1 < p.m) lag_w = k + 1;
  }
}

double forward_memory_head(const BoundProblem& p, const std::vector<double>& finish, int s, int j,
                           const NodeTransfers* nt, const double* offload_lb, double enough) {
  thread_local std::vector<double> scratch;
  const BoundProblemView v = view_of(p);
  scratch.resize(static_cast<std::size_t>(forward_memory_scratch_doubles(v)));
  NodeTransfersView tv;
  if (nt) tv = view_of(*nt);
  return forward_memory_head_core(v, finish.data(), s, j, nt ? &tv : nullptr, offload_lb, enough, scratch.data());
}

double backward_memory_head(const BoundProblem& p, const std::vector<double>& finish, const NodeTimes& node,
                            const NodeTransfers& nt, int s, int j) {
  return backward_memory_head_core(view_of(p), finish.data(), node.end.data(), view_of(nt), s, j);
}

double reload_memory_start(const BoundProblem& p, const std::vector<double>& finish, int s, int i, double extra) {
  return reload_memory_start_core(view_of(p), finish.data(), s, i, extra);
}

}  // namespace optpipe
