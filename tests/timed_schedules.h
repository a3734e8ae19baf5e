// Feasible schedules of an instance with every compute op's start and end, for the bounds'
// tests that hold a bound against what the spec's schedules do: random valid lists and the
// heuristics' schedules, simulated, the infeasible ones left out.
#pragma once

#include <cmath>
#include <random>
#include <vector>

#include "bounds/bound_problem.h"
#include "heuristics/registry.h"
#include "model/instance.h"
#include "model/simulator.h"
#include "tests/test_util.h"

namespace optpipe::test_support {

struct TimedSchedule {
  double makespan = 0;
  std::vector<double> start, end;  // [BoundProblem::op]: NaN for an op the instance lacks
  double start_of(const BoundProblem& p, int type, int s, int j) const { return start[static_cast<std::size_t>(p.op(type, s, j))]; }
  double end_of(const BoundProblem& p, int type, int s, int j) const { return end[static_cast<std::size_t>(p.op(type, s, j))]; }
};

// `random` random valid schedules (offload probability `offload`) and every heuristic's.
inline std::vector<TimedSchedule> timed_schedules(const Instance& inst, const BoundProblem& p, std::mt19937& rng,
                                                  int random = 4, double offload = 0.5) {
  std::vector<Schedule> candidates;
  for (int k = 0; k < random; ++k) candidates.push_back(random_valid_schedule(inst, rng, offload));
  for (const HeuristicResult& r : run_all_heuristics(inst).results) {
    if (r.ok()) candidates.push_back(*r.schedule);
  }
  std::vector<TimedSchedule> out;
  for (const Schedule& sch : candidates) {
    const SimResult sim = simulate(inst, sch);
    if (!sim.feasible) continue;
    TimedSchedule t;
    t.makespan = sim.makespan;
    t.start.assign(static_cast<std::size_t>(3 * p.S * p.m), std::nan(""));
    t.end = t.start;
    for (int d = 0; d < inst.num_devices(); ++d) {
      for (std::size_t q = 0; q < sch.devices[d].size(); ++q) {
        const Action& a = sch.devices[d][q];
        if (!a.is_compute()) continue;
        const auto op = static_cast<std::size_t>(p.op(static_cast<int>(a.type), a.stage, a.mb));
        t.start[op] = sim.timeline[d][q].start;
        t.end[op] = sim.timeline[d][q].end;
      }
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace optpipe::test_support
