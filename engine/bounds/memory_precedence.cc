#include "engine/bounds/memory_precedence.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace optpipe {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

bool known(double x) { return x == x; }

// x <= room up to floating-point rounding (never stricter than the simulator's check).
bool fits(double x, double room) { return x <= room + 1e-9 * std::max(1.0, std::fabs(room)); }

}  // namespace

int fit_count(double x, double unit) {
  if (x < 0) return -1;
  const double q = x / unit;
  // Capped far above any microbatch count, so that the conversion cannot overflow.
  return static_cast<int>(std::min(1e9, std::floor(q + 1e-9 * std::max(1.0, q))));
}

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
  const double room = p.room[s];
  if (j == 0 || !known(room)) return 0.0;
  const int m = p.m;
  const double hf = p.hold_f[s], hw = p.hold_w[s], off = p.offload_release[s];
  const double activation = p.activation[s];
  const bool full_allowed = off < kInf;
  // Listed forwards of s: a prefix 0..listed-1 (FIFO); their levels are decided.
  int listed = 0;
  if (nt) {
    while (listed < j && known(nt->level[s * m + listed])) ++listed;
  }
  // Static shortcut: nothing listed and everything earlier fits beside it.
  if (listed == 0 && j * std::max(hf, hw) <= room) return 0.0;
  auto fin = [&](int type, int jj) { return jj >= 0 ? finish[p.op(type, s, jj)] : 0.0; };
  // Where the chain of the unlisted (assumed fully offloaded, back to back) starts.
  double chain0 = 0;
  if (nt) {
    chain0 = std::max(nt->now, nt->d2h_free[p.group_of_device[p.device_of[s]]]);
    for (int i = 0; i < listed; ++i) {
      if (known(offload_lb[s * m + i])) chain0 = std::max(chain0, offload_lb[s * m + i]);
    }
  }
  // Per microbatch i < j: bytes held if kept, whether it can hold 0, and when (a lower bound).
  thread_local std::vector<double> hold, ztime;
  thread_local std::vector<char> zero;
  hold.resize(j);
  ztime.resize(j);
  zero.resize(j);
  for (int i = 0; i < listed; ++i) {
    const int sj = s * m + i;
    const double r = nt->level[sj];
    const bool reloading = known(nt->reload_start[sj]);
    hold[i] = r >= 1.0 || reloading ? activation : (1.0 - r) * activation;
    zero[i] = r >= 1.0 && !reloading;
    ztime[i] = zero[i] ? offload_lb[sj] : kInf;
  }
  for (int i = listed; i < j; ++i) {
    hold[i] = hf;
    zero[i] = full_allowed;
  }
  double best = kInf;
  // b = j, w = j (everything earlier released) is always feasible, so best ends finite.
  for (int b = j; b >= 0 && best > enough; --b) {
    const double by_b = fin(1, b - 1);
    if (by_b >= best) continue;  // every choice with this b is at least by_b
    // The unlisted zeroable ones of [b, j) go back to back from chain0.
    double cur = chain0;
    for (int i = std::max(b, listed); i < j; ++i) {
      if (!zero[i]) continue;
      cur = std::max(cur, fin(0, i)) + off;
      ztime[i] = cur;
    }
    double kept = 0;
    for (int i = b; i < j; ++i) kept += hold[i];
    // z walks the zeroable ones of [b, j) in index order; freed = bytes they held if kept.
    int z = b;
    double zero_time = 0;  // when the zeroed prefix is all at 0
    for (int w = hw > 0 ? b : 0; w >= 0; --w) {  // without M_W, w = 0 is best
      const double by_w = fin(2, w - 1);
      const double pending = hw * (b - w);
      if (!fits(pending, room)) break;  // smaller w only holds more
      while (!fits(kept + pending, room) && z < j) {
        if (zero[z]) {
          kept -= hold[z];
          zero_time = std::max(zero_time, ztime[z]);
        }
        ++z;
      }
      if (!fits(kept + pending, room)) break;  // not even with every zeroable one at 0
      best = std::min(best, std::max({by_b, by_w, zero_time}));
      if (zero_time >= best || best <= enough) break;  // smaller w only zeroes more
    }
  }
  return best;
}

double backward_memory_head(const BoundProblem& p, const std::vector<double>& finish, const NodeTimes& node,
                            const NodeTransfers& nt, int s, int j) {
  const double room = p.room[s];
  if (!known(room)) return 0.0;
  double extra = 0;
  for (int i = j + 1; i < p.m && known(node.end[p.op(0, s, i)]); ++i) {
    const double r = nt.level[s * p.m + i];
    if (r < 1.0) extra += (1.0 - r) * p.activation[s];
  }
  if (extra <= 0) return 0.0;  // the static rule B (lag_wb) already covers it
  const double hw = p.hold_w[s];
  if (!fits(extra, room)) return kInf;  // B(s, j) can never start: those hold until after it
  if (hw <= 0 || p.types < 3) return 0.0;
  const int k = std::max(0, fit_count(room - extra, hw));  // W that may be pending
  return j - k - 1 >= 0 ? finish[p.op(2, s, j - k - 1)] : 0.0;
}

double reload_memory_start(const BoundProblem& p, const std::vector<double>& finish, int s, int i, double extra) {
  const double room = p.room[s];
  if (!known(room)) return 0.0;
  const double act = p.activation[s], hw = p.hold_w[s];
  if (fits(extra + i * std::max(act, hw), room)) return 0.0;  // everything fits beside it
  auto fin = [&](int type, int jj) { return jj >= 0 ? finish[p.op(type, s, jj)] : 0.0; };
  double best = kInf;
  for (int b = i; b >= 0; --b) {
    const double by_b = fin(1, b - 1);
    if (by_b >= best) continue;
    const double kept = extra + act * (i - b);
    for (int w = hw > 0 ? b : 0; w >= 0; --w) {
      if (!fits(kept + hw * (b - w), room)) break;  // smaller w only holds more
      best = std::min(best, std::max(by_b, fin(2, w - 1)));
    }
  }
  return best;
}

}  // namespace optpipe
