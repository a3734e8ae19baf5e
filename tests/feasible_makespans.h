// Makespans of feasible schedules of an instance, for the relaxations' "never above a schedule"
// tests: of 30 random lists without offload (most deadlock under tight memory), those that
// complete, and every heuristic's.
#pragma once

#include <random>
#include <vector>

#include "heuristics/registry.h"
#include "model/instance.h"
#include "model/simulator.h"
#include "tests/test_util.h"

namespace optpipe::test_support {

inline std::vector<double> feasible_makespans(const Instance& inst, std::mt19937& rng) {
  std::vector<double> makespans;
  for (int k = 0; k < 30; ++k) {
    const SimResult sim = simulate(inst, random_valid_schedule(inst, rng, 0.0));
    if (sim.feasible) makespans.push_back(sim.makespan);
  }
  for (const HeuristicResult& h : run_all_heuristics(inst, false).results) {
    if (h.ok()) makespans.push_back(h.sim.makespan);
  }
  return makespans;
}

}  // namespace optpipe::test_support
