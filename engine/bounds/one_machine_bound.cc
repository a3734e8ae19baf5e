#include "engine/bounds/one_machine_bound.h"

#include <algorithm>
#include <queue>

namespace optpipe {

double jackson_preemptive_bound(std::vector<OneMachineJob>& jobs) {
  if (jobs.empty()) return 0.0;
  std::sort(jobs.begin(), jobs.end(), [](const OneMachineJob& a, const OneMachineJob& b) { return a.release < b.release; });
  // Released jobs by largest tail; each entry holds (tail, remaining processing).
  std::priority_queue<std::pair<double, double>> ready;
  double t = jobs.front().release, bound = 0;
  std::size_t next = 0;
  while (next < jobs.size() || !ready.empty()) {
    if (ready.empty() && t < jobs[next].release) t = jobs[next].release;
    while (next < jobs.size() && jobs[next].release <= t) {
      ready.emplace(jobs[next].tail, jobs[next].processing);
      ++next;
    }
    auto [tail, left] = ready.top();
    ready.pop();
    // Run it until it finishes or the next release (which may preempt it).
    const double until = next < jobs.size() ? jobs[next].release : t + left;
    const double run = std::min(left, until - t);
    t += run;
    left -= run;
    if (left <= 1e-12) {
      bound = std::max(bound, t + tail);
    } else {
      ready.emplace(tail, left);
    }
  }
  return bound;
}

double one_machine_bound(const BoundProblem& p, const std::vector<double>& head, std::vector<OneMachineJob>& scratch) {
  double best = 0;
  for (int d = 0; d < p.D; ++d) {
    scratch.clear();
    for (int s = 0; s < p.S; ++s) {
      if (p.device_of[s] != d) continue;
      for (int type = 0; type < p.types; ++type) {
        for (int j = 0; j < p.m; ++j) {
          const double h = head[p.op(type, s, j)];
          if (h == h) scratch.push_back({h, p.dur[type * p.S + s], p.op_tail(type, s, j)});
        }
      }
    }
    best = std::max(best, jackson_preemptive_bound(scratch));
  }
  return best;
}

}  // namespace optpipe
