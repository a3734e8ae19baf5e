// Host and device cores (hd.h) of the memory rules of memory_precedence.h: plain arrays, the
// caller's scratch, no allocation. The std::vector functions of memory_precedence.h call them;
// the rules, their proofs and the complexity are documented there.
#pragma once

#include <math.h>

#include "bounds/bound_view.h"
#include "bounds/hd.h"

namespace optpipe {

// x <= room up to floating-point rounding (never stricter than the simulator's check).
OPTPIPE_HD inline bool memory_fits(double x, double room) { return x <= room + 1e-9 * hd::max(1.0, ::fabs(room)); }

// fit_count of memory_precedence.h.
OPTPIPE_HD inline int fit_count_core(double x, double unit) {
  if (x < 0) return -1;
  const double q = x / unit;
  // Capped far above any microbatch count, so that the conversion cannot overflow.
  return static_cast<int>(hd::min(1e9, ::floor(q + 1e-9 * hd::max(1.0, q))));
}

// finish of op (type, s, jj), 0 before the first microbatch.
OPTPIPE_HD inline double memory_fin(const BoundProblemView& p, const double* finish, int type, int s, int jj) {
  return jj >= 0 ? finish[p.op(type, s, jj)] : 0.0;
}

// Scratch doubles forward_memory_head_core needs: 3·m.
OPTPIPE_HD inline int forward_memory_scratch_doubles(const BoundProblemView& p) { return 3 * p.m; }

// Rule F (forward_memory_head). `nt` null: nothing decided (then `offload_lb` is not read).
// `scratch`: forward_memory_scratch_doubles(p) doubles.
OPTPIPE_HD inline double forward_memory_head_core(const BoundProblemView& p, const double* finish, int s, int j,
                                                  const NodeTransfersView* nt, const double* offload_lb,
                                                  double enough, double* scratch) {
  const double room = p.room[s];
  if (j == 0 || !hd::known(room)) return 0.0;
  const int m = p.m;
  const double hf = p.hold_f[s], hw = p.hold_w[s], off = p.offload_release[s];
  const double activation = p.activation[s];
  const double kInf = hd::inf();
  const bool full_allowed = off < kInf;
  // Listed forwards of s: a prefix 0..listed-1 (FIFO); their levels are decided.
  int listed = 0;
  if (nt) {
    while (listed < j && hd::known(nt->level[s * m + listed])) ++listed;
  }
  // Static shortcut: nothing listed and everything earlier fits beside it.
  if (listed == 0 && j * hd::max(hf, hw) <= room) return 0.0;
  // Where the chain of the unlisted (assumed fully offloaded, back to back) starts.
  double chain0 = 0;
  if (nt) {
    chain0 = hd::max(nt->now, nt->d2h_free[p.group_of_device[p.device_of[s]]]);
    for (int i = 0; i < listed; ++i) {
      if (hd::known(offload_lb[s * m + i])) chain0 = hd::max(chain0, offload_lb[s * m + i]);
    }
  }
  // Per microbatch i < j: bytes held if kept, whether it can hold 0 (1 or 0), and when (a lower
  // bound).
  double* hold = scratch;
  double* ztime = scratch + m;
  double* zero = scratch + 2 * m;
  for (int i = 0; i < listed; ++i) {
    const int sj = s * m + i;
    const double r = nt->level[sj];
    const bool reloading = hd::known(nt->reload_start[sj]);
    hold[i] = r >= 1.0 || reloading ? activation : (1.0 - r) * activation;
    const bool z = r >= 1.0 && !reloading;
    zero[i] = z ? 1.0 : 0.0;
    ztime[i] = z ? offload_lb[sj] : kInf;
  }
  for (int i = listed; i < j; ++i) {
    hold[i] = hf;
    zero[i] = full_allowed ? 1.0 : 0.0;
  }
  double best = kInf;
  // b = j, w = j (everything earlier released) is always feasible, so best ends finite.
  for (int b = j; b >= 0 && best > enough; --b) {
    const double by_b = memory_fin(p, finish, 1, s, b - 1);
    if (by_b >= best) continue;  // every choice with this b is at least by_b
    // The unlisted zeroable ones of [b, j) go back to back from chain0.
    double cur = chain0;
    for (int i = hd::max(b, listed); i < j; ++i) {
      if (zero[i] == 0.0) continue;
      cur = hd::max(cur, memory_fin(p, finish, 0, s, i)) + off;
      ztime[i] = cur;
    }
    double kept = 0;
    for (int i = b; i < j; ++i) kept += hold[i];
    // z walks the zeroable ones of [b, j) in index order; freed = bytes they held if kept.
    int z = b;
    double zero_time = 0;  // when the zeroed prefix is all at 0
    for (int w = hw > 0 ? b : 0; w >= 0; --w) {  // without M_W, w = 0 is best
      const double by_w = memory_fin(p, finish, 2, s, w - 1);
      const double pending = hw * (b - w);
      if (!memory_fits(pending, room)) break;  // smaller w only holds more
      while (!memory_fits(kept + pending, room) && z < j) {
        if (zero[z] != 0.0) {
          kept -= hold[z];
          zero_time = hd::max(zero_time, ztime[z]);
        }
        ++z;
      }
      if (!memory_fits(kept + pending, room)) break;  // not even with every zeroable one at 0
      best = hd::min(best, hd::max(hd::max(by_b, by_w), zero_time));
      if (zero_time >= best || best <= enough) break;  // smaller w only zeroes more
    }
  }
  return best;
}

// Rule B at a node (backward_memory_head); `end` [op]: the node's known ends (NaN: not started).
OPTPIPE_HD inline double backward_memory_head_core(const BoundProblemView& p, const double* finish, const double* end,
                                                   const NodeTransfersView& nt, int s, int j) {
  const double room = p.room[s];
  if (!hd::known(room)) return 0.0;
  double extra = 0;
  for (int i = j + 1; i < p.m && hd::known(end[p.op(0, s, i)]); ++i) {
    const double r = nt.level[s * p.m + i];
    if (r < 1.0) extra += (1.0 - r) * p.activation[s];
  }
  if (extra <= 0) return 0.0;  // the static rule B (lag_wb) already covers it
  const double hw = p.hold_w[s];
  if (!memory_fits(extra, room)) return hd::inf();  // B(s, j) can never start: those hold until after it
  if (hw <= 0 || p.types < 3) return 0.0;
  const int k = hd::max(0, fit_count_core(room - extra, hw));  // W that may be pending
  return j - k - 1 >= 0 ? finish[p.op(2, s, j - k - 1)] : 0.0;
}

// Rule R (reload_memory_start).
OPTPIPE_HD inline double reload_memory_start_core(const BoundProblemView& p, const double* finish, int s, int i,
                                                  double extra) {
  const double room = p.room[s];
  if (!hd::known(room)) return 0.0;
  const double act = p.activation[s], hw = p.hold_w[s];
  if (memory_fits(extra + i * hd::max(act, hw), room)) return 0.0;  // everything fits beside it
  double best = hd::inf();
  for (int b = i; b >= 0; --b) {
    const double by_b = memory_fin(p, finish, 1, s, b - 1);
    if (by_b >= best) continue;
    const double kept = extra + act * (i - b);
    for (int w = hw > 0 ? b : 0; w >= 0; --w) {
      if (!memory_fits(kept + hw * (b - w), room)) break;  // smaller w only holds more
      best = hd::min(best, hd::max(by_b, memory_fin(p, finish, 2, s, w - 1)));
    }
  }
  return best;
}

// Rule R with the later forwards of s that started at level 1 (their reload has not started: R
// is FIFO per stage): such a microbatch holds its whole activation until its offload ends, at
// the earliest `later_offload_lb` (the known end, or its F's end, the channel's and the node's
// time plus the transfer). With Z the set of those at 0 when the reload starts, the reload
// starts no earlier than every offload end of Z, and rule R holds with the others' activations
// added to `extra`; the largest Z for a start x is every one whose lower bound is <= x, so trying
// each threshold (none, or one of those lower bounds) and keeping the smallest result is a lower
// bound. `lower`: a known lower bound on the start. memory_precedence.h has the proof.
OPTPIPE_HD inline double later_offload_lb(const BoundProblemView& p, const NodeTransfersView& nt, const double* end,
                                          int s, int i) {
  const double e = nt.offload_end[s * p.m + i];
  if (hd::known(e)) return e;
  const int g = p.group_of_device[p.device_of[s]];
  return hd::max(hd::max(end[p.op(0, s, i)], nt.now), nt.d2h_free[g]) + p.offload_time[s];
}

OPTPIPE_HD inline double reload_start_with_offloading_core(const BoundProblemView& p, const NodeTransfersView& nt,
                                                           const double* end, const double* finish, int s, int j,
                                                           double extra, double lower) {
  const int m = p.m;
  // The later forwards that started at level 1: a prefix of j+1.. (F is FIFO).
  auto offloading = [&](int i) { return hd::known(end[p.op(0, s, i)]) && nt.level[s * m + i] >= 1.0; };
  int last = j + 1;
  while (last < m && hd::known(end[p.op(0, s, last)])) ++last;
  double best = hd::inf();
  for (int k = j; k < last; ++k) {  // k = j: threshold `lower`; else the offload of k
    if (k > j && !offloading(k)) continue;
    const double theta = k == j ? lower : hd::max(lower, later_offload_lb(p, nt, end, s, k));
    if (theta >= best) continue;
    double held = extra;
    for (int i = j + 1; i < last; ++i) {
      if (offloading(i) && later_offload_lb(p, nt, end, s, i) > theta) held += p.activation[s];
    }
    best = hd::min(best, hd::max(theta, reload_memory_start_core(p, finish, s, j, held)));
  }
  return best;
}

}  // namespace optpipe
