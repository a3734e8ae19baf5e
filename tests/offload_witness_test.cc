// A witness that offloading pays on instances/offload-slow-pcie-4x8.json even though one
// offload + reload (29 + 29 ms) is slow: the schedule below (found by simulated annealing over
// the device lists with offload toggles and R placement; see the report of the offload study)
// offloads 4 microbatches of stage 0 and one of stage 1 and beats every baseline heuristic,
// ZB greedy's 343.70 ms included (it simulates at 341.92 ms).
//
// Why it works: the limit holds two activations per device. A resident microbatch of stage 0
// occupies its memory from F start to W end, ≥ 77.9 ms, more when the pipeline makes it wait; an
// offloaded one occupies it only during F + offload (38.2 ms) and reload + B + W (42.7 ms), 80.9
// ms in all whatever the pipeline does, so in a congested pipeline offloading packs the memory
// better. The regular family (per-device warmup 1-3, W right after B or one F later, any subset
// of stage 0's microbatches offloaded, four subsets on stage 1, R right after F, right before B
// or one action earlier: 3,981,312 schedules) is at best 346.50 ms; this irregular one is the
// best the study found.
//
// The solver, local search and LNS do not find it (yet). The test checks that it is valid and
// that no lower bound of the solver ever exceeds it (a bound above a feasible makespan would be
// wrong).
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "model/instance_io.h"
#include "model/validator.h"
#include "search/solver.h"
#include "heuristics/registry.h"
#include "tests/test_paths.h"
#include "tests/test_util.h"

namespace optpipe {
namespace {

TEST(OffloadWitness, SlowPcieScheduleIsValidAndAboveEveryBound) {
  const Instance inst = load_instance(std::string(OPTPIPE_SOURCE_DIR) + "/instances/offload-slow-pcie-4x8.json");
  const Schedule sch = test_support::offload_slow_witness(inst);
  ASSERT_TRUE(sch.has_offload());

  const Validation v = validate(inst, sch);
  ASSERT_TRUE(v.valid()) << (v.violations.empty() ? "" : v.violations.front().message);
  ASSERT_TRUE(v.sim.has_value());
  ASSERT_TRUE(v.sim->feasible) << v.sim->reason;
  for (int d = 0; d < inst.num_devices(); ++d) {
    EXPECT_LE(v.sim->peak_memory[d], inst.devices[d].memory_limit + kMemoryTolerance) << "device " << d;
  }

  // The solver's bounds never exceed a feasible schedule's makespan: the root bound and a short
  // search, given this schedule as its warm start, stay at or below it (and the result is no
  // worse). For the record, the baselines' best is printed (343.70 ms, ZB greedy, when written).
  const BestResult all = run_all_heuristics(inst, /*parallel=*/false);
  if (all.best >= 0) {
    std::printf("[ witness  ] %.2f ms; best baseline %s %.2f ms\n", v.sim->makespan, all.results[all.best].name.c_str(),
                all.results[all.best].sim.makespan);
  }
  SolveOptions opt;
  opt.threads = 2;
  opt.time_limit = 1.0;
  const SolveResult r = solve(inst, {sch}, opt);
  EXPECT_LE(r.root_bound, v.sim->makespan + 1e-9);
  EXPECT_LE(r.bound, v.sim->makespan + 1e-9);
  ASSERT_TRUE(r.schedule.has_value());
  EXPECT_LE(r.makespan, v.sim->makespan + 1e-9);
}

}  // namespace
}  // namespace optpipe
