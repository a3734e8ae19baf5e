#include "bounds/group_forward_bound.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "bounds/memory_precedence_core.h"

namespace optpipe {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The stages up to s_prime, s_prime included, of s_prime's PCIe group that are under memory
// pressure (a room): those whose offloads share its D2H channel.
std::vector<int> pressured_group_stages(const BoundProblem& p, int s_prime) {
  auto group_of = [&p](int s) {
    return p.group_of_device[static_cast<std::size_t>(p.device_of[static_cast<std::size_t>(s)])];
  };
  std::vector<int> stages;
  for (int s = 0; s <= s_prime; ++s) {
    if (group_of(s) == group_of(s_prime) && !std::isnan(p.room[static_cast<std::size_t>(s)])) stages.push_back(s);
  }
  return stages;
}

double finish_of(const BoundProblem& p, const std::vector<double>& head, int type, int s, int j) {
  const double h = head[static_cast<std::size_t>(p.op(type, s, j))];
  return (std::isnan(h) ? 0.0 : h) + p.dur[static_cast<std::size_t>(type * p.S + s)];
}

// The least number of full offloads stage s needs among microbatches 0..j-1 when F(s, j)
// starts at or after t (rule F, the B and W ends that can have happened by t); -1: none works.
int offloads_needed(const BoundProblem& p, const std::vector<double>& head, int s, int j, double t) {
  const double room = p.room[static_cast<std::size_t>(s)];
  if (std::isnan(room)) return 0;  // no memory pressure
  const double hf = p.hold_f[static_cast<std::size_t>(s)], hw = p.hold_w[static_cast<std::size_t>(s)];
  const bool full_allowed = p.offload_release[static_cast<std::size_t>(s)] < kInf;
  // B ends and W ends by t: prefixes (each type is FIFO, so their finishes are nondecreasing).
  int bmax = 0, wmax = 0;
  while (bmax < j && finish_of(p, head, 1, s, bmax) <= t) ++bmax;
  if (p.types >= 3) {
    while (wmax < j && finish_of(p, head, 2, s, wmax) <= t) ++wmax;
  }
  int best = -1;
  for (int b = 0; b <= bmax; ++b) {
    const int w = p.types >= 3 ? std::min(b, wmax) : b;  // more W ends only hold less
    const double pending = hw * (b - w);
    if (!memory_fits(pending, room)) continue;
    int o = 0;
    while (o < j - b && !memory_fits(hf * (j - b - o) + pending, room)) ++o;
    if (!memory_fits(hf * (j - b - o) + pending, room)) continue;
    if (o > 0 && !full_allowed) continue;
    if (best < 0 || o < best) best = o;
    if (best == 0) break;
  }
  return best;
}

}  // namespace

double group_forward_head(const BoundProblem& p, const std::vector<double>& head, int s_prime, int j) {
  const double own = head[static_cast<std::size_t>(p.op(0, s_prime, j))];
  const double lo = std::isnan(own) ? 0.0 : own;
  if (j == 0) return lo;
  const std::vector<int> stages = pressured_group_stages(p, s_prime);
  if (stages.empty()) return lo;
  // The instants at which a count can change: the B and W ends' lower bounds after lo.
  std::vector<double> breaks;
  for (int s : stages) {
    for (int i = 0; i < j; ++i) {
      for (int type = 1; type < p.types; ++type) {
        const double f = finish_of(p, head, type, s, i);
        if (f > lo) breaks.push_back(f);
      }
    }
  }
  std::sort(breaks.begin(), breaks.end());
  breaks.erase(std::unique(breaks.begin(), breaks.end()), breaks.end());
  struct Job {
    double release, length;
  };
  std::vector<Job> jobs;
  for (std::size_t k = 0; k <= breaks.size(); ++k) {
    const double tau = k == 0 ? lo : breaks[k - 1];
    const double next = k < breaks.size() ? breaks[k] : kInf;
    if (!(next > tau)) continue;
    jobs.clear();
    bool feasible = true;
    for (int s : stages) {
      const int o = offloads_needed(p, head, s, j, tau);
      if (o < 0) {
        feasible = false;
        break;
      }
      const double len = p.offload_release[static_cast<std::size_t>(s)];
      for (int i = 0; i < o; ++i) jobs.push_back({finish_of(p, head, 0, s, i), len});
    }
    if (!feasible) continue;
    std::sort(jobs.begin(), jobs.end(), [](const Job& a, const Job& b) { return a.release < b.release; });
    double done = 0;  // earliest-release-first on the group's D2H channel
    for (const Job& job : jobs) done = std::max(done, job.release) + job.length;
    const double t = std::max(tau, done);
    if (t < next) return t;
  }
  return lo;  // not reached: past the last break every B and W has ended, and nothing is needed
}

GroupForwardBound group_forward_bound(const BoundProblem& p, const std::vector<double>& head) {
  GroupForwardBound out;
  for (int s = 0; s < p.S; ++s) {
    if (std::isnan(p.room[static_cast<std::size_t>(s)])) continue;
    // Only where another stage of the group, before s in the chain, shares the channel (with s
    // alone this is rule F, which the heads already hold).
    if (pressured_group_stages(p, s).size() < 2) continue;
    for (int j = 1; j < p.m; ++j) {
      const double t = group_forward_head(p, head, s, j);
      const double v = t + p.dur[static_cast<std::size_t>(s)] + p.op_tail(0, s, j);
      if (v > out.bound) out = {v, s, j};
    }
  }
  return out;
}

}  // namespace optpipe
