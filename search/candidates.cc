#include "search/candidates.h"

#include <algorithm>
#include <cmath>

namespace optpipe {
namespace {

bool known(double x) { return x == x; }

}  // namespace

void branch_candidates(const Instance& inst, const BoundProblem& p, const Simulator::Snapshot& st, int d, double t,
                       const std::vector<double>& head, bool active_rule, std::vector<Candidate>& out,
                       CandidateStats& stats) {
  out.clear();
  const int S = p.S, m = p.m;
  auto next = [&](OpType type, int s) { return st.next_mb[static_cast<std::size_t>(type) * S + s]; };
  auto listed = [&](OpType type, int s, int j) { return next(type, s) > j; };
  auto level = [&](int s, int j) { return st.level[static_cast<std::size_t>(s) * m + j]; };
  // Earliest start of an op not started: its head (>= t, the device's free time, the inputs).
  auto earliest = [&](int type, int s, int j) {
    const double h = head[p.op(type, s, j)];
    return known(h) ? std::max(h, t) : t;
  };
  for (int s = 0; s < S; ++s) {
    if (p.device_of[s] != d) continue;
    // F(s, j): F(s-1, j) must not be an unlisted op of this device (rule 1).
    const int jf = next(OpType::F, s);
    if (jf < m && !(s > 0 && p.device_of[s - 1] == d && !listed(OpType::F, s - 1, jf))) {
      const double e = earliest(0, s, jf);
      out.push_back({make_f(s, jf, 0.0), e});
      if (inst.stages[s].offloadable()) {
        for (double r : inst.offload_levels) {
          if (r > 0) out.push_back({make_f(s, jf, r), e});
        }
      }
    }
    // B(s, j): its F listed, its R listed if offloaded, B(s+1, j) listed if on this device.
    const int jb = next(OpType::B, s);
    if (jb < m && listed(OpType::F, s, jb) && !(level(s, jb) > 0 && !listed(OpType::R, s, jb)) &&
        !(s + 1 < S && p.device_of[s + 1] == d && !listed(OpType::B, s + 1, jb))) {
      out.push_back({make_b(s, jb), earliest(1, s, jb)});
    }
    // W(s, j): its B listed.
    const int jw = next(OpType::W, s);
    if (p.types == 3 && jw < m && listed(OpType::B, s, jw)) out.push_back({make_w(s, jw), earliest(2, s, jw)});
    // R: the next offloaded microbatch whose F is listed and whose R is not.
    for (int j = next(OpType::R, s); j < next(OpType::F, s); ++j) {
      if (level(s, j) > 0) {
        out.push_back({make_r(s, j), t});
        break;
      }
    }
  }
  if (!active_rule || out.size() < 2) return;
  // Rule 2: the B or W that can start now and ends first.
  double fill_end = INFINITY;
  for (const Candidate& c : out) {
    if ((c.action.type == OpType::B || c.action.type == OpType::W) && c.earliest_start <= t + kTimeEps) {
      fill_end = std::min(fill_end, t + p.dur[static_cast<int>(c.action.type) * S + c.action.stage]);
    }
  }
  if (fill_end == INFINITY) return;
  const std::size_t before = out.size();
  out.erase(std::remove_if(out.begin(), out.end(),
                           [&](const Candidate& c) {
                             return c.earliest_start > t + kTimeEps && fill_end <= c.earliest_start + kTimeEps;
                           }),
            out.end());
  stats.dominated += static_cast<long long>(before - out.size());
}

}  // namespace optpipe
