#include "engine/bounds/heads.h"

#include <algorithm>
#include <limits>

#include "engine/bounds/memory_precedence.h"

namespace optpipe {

void compute_heads(const BoundProblem& p, const NodeTimes& node, std::vector<double>& head,
                   std::vector<double>& finish, const NodeTransfers* nt, std::vector<double>* offload_out,
                   std::vector<double>* reload_out) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  head.assign(p.num_ops(), nan);
  finish.assign(p.num_ops(), 0.0);
  thread_local std::vector<double> off_local, rel_local;
  std::vector<double>& off_lb = offload_out ? *offload_out : off_local;
  std::vector<double>& rel_lb = reload_out ? *reload_out : rel_local;
  thread_local std::vector<double> off_chain, rel_chain;  // [s]: end of the stage's last offload / reload so far
  if (nt) {
    off_lb.assign(p.S * p.m, nan);
    rel_lb.assign(p.S * p.m, nan);
    off_chain.assign(p.S, 0.0);
    rel_chain.assign(p.S, 0.0);
  }
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
    // F: after F(s-1, j) + comm, F(s, j-1), and the memory rule F.
    for (int s = 0; s < p.S; ++s) {
      const int o = p.op(0, s, j);
      if (node.end[o] == node.end[o]) {
        finish[o] = node.end[o];
      } else {
        double r = 0;
        if (s > 0) r = finish[p.op(0, s - 1, j)] + p.comm_after[s - 1];
        if (j > 0) r = std::max(r, finish[p.op(0, s, j - 1)]);
        const double floor = std::max(r, node.device_free[p.device_of[s]]);
        r = std::max(r, forward_memory_head(p, finish, s, j, nt, nt ? off_lb.data() : nullptr, floor));
        settle(0, s, j, r);
      }
      // Its offload, when decided.
      if (!nt) continue;
      const int sj = s * p.m + j;
      const double level = nt->level[sj];
      if (!(level > 0)) continue;
      const int g = p.group_of_device[p.device_of[s]];
      double e = nt->offload_end[sj];
      if (!(e == e)) e = std::max({finish[o], off_chain[s], nt->d2h_free[g]}) + level * p.offload_time[s];
      off_lb[sj] = off_chain[s] = e;
      double re = nt->reload_end[sj];  // known once the reload started
      if (!(re == re)) {
        // Rule R (memory_precedence.h): room for it at its start. Later forwards of s already
        // started and not fully offloaded hold their unoffloaded part then.
        double extra = 0;
        for (int i = j + 1; i < p.m && node.end[p.op(0, s, i)] == node.end[p.op(0, s, i)]; ++i) {
          if (nt->level[s * p.m + i] < 1.0) extra += (1.0 - nt->level[s * p.m + i]) * p.activation[s];
        }
        const double start = std::max({e, rel_chain[s], nt->h2d_free[g], reload_memory_start(p, finish, s, j, extra)});
        re = start + level * p.reload_time[s];
      }
      rel_lb[sj] = rel_chain[s] = re;
    }
    // B: after F(s, j), B(s+1, j) + comm, B(s, j-1), W(s, j - lag_wb) (memory rule B, at a node
    // also with the later forwards that hold memory) and the reload of (s, j).
    for (int s = p.S - 1; s >= 0; --s) {
      double r = finish[p.op(0, s, j)];
      if (s + 1 < p.S) r = std::max(r, finish[p.op(1, s + 1, j)] + p.comm_after[s]);
      if (j > 0) r = std::max(r, finish[p.op(1, s, j - 1)]);
      if (const int k = p.lag_wb[s]; k > 0 && j >= k && p.types == 3) r = std::max(r, finish[p.op(2, s, j - k)]);
      if (nt) {
        const double re = rel_lb[s * p.m + j];
        if (re == re) r = std::max(r, re);
        r = std::max(r, backward_memory_head(p, finish, node, *nt, s, j));
      }
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
