// The waves heuristic (heuristics/waves.h) and `best` on tight instances: best returns a valid
// schedule exactly when the brute force finds one, on random tight instances of every
// placement; waves never deadlock on their own; k = 1 is the memory floor without offload.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "heuristics/registry.h"
#include "heuristics/waves.h"
#include "heuristics/zb_greedy.h"
#include "model/simulator.h"
#include "model/validator.h"
#include "tests/brute_force.h"
#include "tests/case_range.h"
#include "tests/test_util.h"

namespace optpipe {
namespace {

struct TightCase {
  std::string label;
  Instance instance;
};

// Random tight instances within reach of the brute force, of every placement in turn: one
// stage per device, V, loop, another multi-stage placement and a single device; half of them
// with offloadable stages (levels 0, 0.5 and 1); squeezed to between 1.0 and 1.8 activations of
// room above the static memory (fixed seed).
std::vector<TightCase> tight_instances(int wanted) {
  std::mt19937 rng(777);
  std::vector<TightCase> out;
  std::uniform_real_distribution<double> room(1.0, 1.8), transfer(0.2, 3.0);
  const std::vector<std::vector<int>> placements{{0, 1}, {0, 1, 1, 0}, {0, 1, 0, 1}, {0, 0, 1}, {0, 0}};
  for (int i = 0; i < 20000 && static_cast<int>(out.size()) < wanted; ++i) {
    const std::vector<int>& devices = placements[static_cast<std::size_t>(i) % placements.size()];
    const int S = static_cast<int>(devices.size());
    const int m = S == 4 || i % 3 != 0 ? 2 : 3;
    Instance inst = test_support::uniform_instance(S, m, 1, 1, 1);
    inst.split_backward = S < 4 ? (i / 5) % 2 == 0 : (i / 5) % 4 == 0;
    inst.devices.resize(static_cast<std::size_t>(*std::max_element(devices.begin(), devices.end()) + 1));
    for (int s = 0; s < S; ++s) inst.stages[s].device = devices[static_cast<std::size_t>(s)];
    test_support::randomise_costs(inst, rng);
    if ((i / 10) % 2 == 0) {
      inst.offload_levels = {0.0, 0.5, 1.0};
      for (auto& st : inst.stages) {
        if (rng() % 3 == 0) continue;
        st.offload = transfer(rng);
        st.reload = transfer(rng);
      }
    }
    test_support::squeeze_memory(inst, room(rng));
    if (test_support::count_schedules(inst, 200'000) > 200'000) continue;
    inst.name = "tight-" + std::to_string(i);
    out.push_back({inst.name + " (" + to_string(inst.placement()) + ", D=" + std::to_string(inst.num_devices()) +
                       " S=" + std::to_string(S) + " m=" + std::to_string(m) +
                       (inst.split_backward ? " split" : " fused") + (inst.can_offload() ? ", offload" : "") + ")",
                   std::move(inst)});
  }
  return out;
}

using BestVsBruteForce = test_support::CaseRangeTest;

TEST_P(BestVsBruteForce, ScheduleExactlyWhenOneExists) {
  const test_support::CaseRange range = GetParam();
  const std::vector<TightCase> cases = tight_instances(range.total);
  ASSERT_EQ(static_cast<int>(cases.size()), range.total);
  std::array<int, 4> feasible_by_placement{}, infeasible = {};
  for (int k = range.begin; k < range.end; ++k) {
    const TightCase& c = cases[static_cast<std::size_t>(k)];
    SCOPED_TRACE(c.label);
    const test_support::BruteForceResult bf = test_support::brute_force_optimum(c.instance, 200'000);
    ASSERT_FALSE(bf.aborted);
    const BestResult best = run_all_heuristics(c.instance);
    const HeuristicResult* r = best.best_result();
    EXPECT_EQ(r != nullptr, bf.feasible) << (r ? "best found " + r->name + " where the brute force found nothing"
                                              : "no heuristic fits; the brute force found " +
                                                    std::to_string(bf.optimum) + " ms");
    if (r) {
      ASSERT_TRUE(validate(c.instance, *r->schedule).valid());
      EXPECT_GE(r->sim.makespan, bf.optimum - 1e-6);
    }
    if (bf.feasible) {
      ++feasible_by_placement[static_cast<std::size_t>(c.instance.placement())];
    } else {
      ++infeasible[static_cast<std::size_t>(c.instance.placement())];
    }
  }
  std::printf("[ waves    ] feasible by placement (one, V, loop, other): %d %d %d %d; infeasible: %d %d %d %d\n",
              feasible_by_placement[0], feasible_by_placement[1], feasible_by_placement[2], feasible_by_placement[3],
              infeasible[0], infeasible[1], infeasible[2], infeasible[3]);
}
INSTANTIATE_TEST_SUITE_P(Seed777, BestVsBruteForce, testing::ValuesIn(test_support::case_ranges(120, 3)),
                         test_support::case_range_name);

// Every wave size gives valid lists that complete without memory limits, on every placement;
// waves of m are GPipe's lists.
TEST(Waves, ListsAreValidAndNeverDeadlockOnTheirOwn) {
  std::mt19937 rng(5);
  for (int i = 0; i < 200; ++i) {
    test_support::RandomInstanceOptions o;
    o.offloadable_probability = 0.5;
    const Instance inst = test_support::random_instance(rng, o);
    for (int k = 1; k <= inst.microbatches; ++k) {
      for (bool offload : {false, true}) {
        const Schedule sch = wave_schedule(inst, k, offload);
        ASSERT_TRUE(check_structure(inst, sch).empty()) << "case " << i << " k " << k;
        const SimResult r = simulate(inst, sch, SimOptions::quiet(false));
        ASSERT_TRUE(r.feasible) << "case " << i << " k " << k << ": " << r.reason;
      }
    }
  }
}

// Without offload, one microbatch at a time needs exactly static + the activations of each
// device's stages: the floor every schedule reaches (waves.h).
TEST(Waves, OneAtATimeNeedsOneMicrobatchOfActivationsPerDevice) {
  std::mt19937 rng(9);
  for (int i = 0; i < 100; ++i) {
    test_support::RandomInstanceOptions o;
    o.offloadable_probability = 0.0;
    const Instance inst = test_support::random_instance(rng, o);
    const SimResult r = simulate(inst, wave_schedule(inst, 1, false), SimOptions::quiet(false));
    ASSERT_TRUE(r.feasible);
    const auto stages = inst.stages_by_device();
    for (int d = 0; d < inst.num_devices(); ++d) {
      double held = 0;
      for (int s : stages[d]) held += inst.stages[s].activation;
      EXPECT_NEAR(r.peak_memory[d], inst.devices[d].static_memory + held, 1.0) << "case " << i << " device " << d;
    }
  }
}

// zb-greedy backs off to round-trip admission instead of stopping: without offload it returns a
// schedule that fits on every instance where one microbatch at a time fits (the memory floor),
// whatever the placement and the variant.
TEST(ZbGreedy, BacksOffInsteadOfStoppingWheneverOneMicrobatchFits) {
  const std::vector<TightCase> cases = tight_instances(120);
  int checked = 0, multi_stage = 0;
  for (const TightCase& c : cases) {
    if (c.instance.can_offload()) continue;
    if (!simulate(c.instance, wave_schedule(c.instance, 1, false), SimOptions::quiet()).feasible) continue;
    ++checked;
    multi_stage += c.instance.placement() != Placement::kOnePerDevice;
    for (bool prioritize_b : {true, false}) {
      ZbGreedyOptions o;
      o.prioritize_b = prioritize_b;
      std::string why;
      const std::optional<Schedule> sch = zb_greedy_schedule(c.instance, o, &why);
      ASSERT_TRUE(sch) << c.label << ": " << why;
      const SimResult r = simulate(c.instance, *sch, SimOptions::quiet());
      EXPECT_TRUE(r.feasible) << c.label << ": " << r.reason;
    }
  }
  EXPECT_GE(checked, 20);
  EXPECT_GE(multi_stage, 10);
}

// A stop request reaches the heuristics that loop: AdaOffload stops repairing and says so,
// zb-greedy keeps the variants it ran (at least one), and waves still tries one microbatch at
// a time, so `best` still answers.
TEST(RunLimits, StoppedHeuristicsKeepWhatTheyHaveAndWavesStillAnswers) {
  const Instance inst = test_support::uniform_instance(4, 8, 1, 2, 1, 0.1, test_support::GiB, test_support::GiB / 2,
                                                       2.5 * test_support::GiB);
  std::atomic<bool> stop{true};
  const RunLimits stopped{&stop};
  EXPECT_TRUE(stopped.expired());
  EXPECT_FALSE(RunLimits{}.expired());
  EXPECT_TRUE(RunLimits::within(0.0).expired());
  EXPECT_FALSE(RunLimits::within(1e30).expired());
  const BestResult best = run_all_heuristics(inst, true, {}, stopped);
  ASSERT_TRUE(best.best_result());
  for (const HeuristicResult& r : best.results) {
    if (r.name == "zb-greedy" && r.ok()) EXPECT_NE(r.detail.find("best of 1 variants"), std::string::npos) << r.detail;
    if (r.name == "waves") EXPECT_TRUE(r.ok()) << r.reason;
  }
  // An instance AdaOffload repairs when it may run, and stops repairing when it may not.
  Instance offload = test_support::uniform_instance(4, 8, 1, 2, 1, 0.1, test_support::GiB, test_support::GiB / 4,
                                                    3.5 * test_support::GiB);
  for (Stage& st : offload.stages) st.offload = 0.5, st.reload = 0.5;
  const Heuristic& ada = *find_heuristic("ada-offload");
  ASSERT_TRUE(run_heuristic(ada, offload).ok()) << run_heuristic(ada, offload).reason;
  const HeuristicResult cut = run_heuristic(ada, offload, stopped);
  EXPECT_FALSE(cut.ok());
  EXPECT_NE(cut.reason.find("stopped"), std::string::npos) << cut.reason;
}

}  // namespace
}  // namespace optpipe
