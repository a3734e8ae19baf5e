// The memory-time frontier (frontier/): the memory floor against the brute force (below it no
// schedule exists, at it one does), the classic schedules' limits against their simulated peaks
// and the Zero Bubble paper's formulas, and the sweep: monotone, every point's schedule valid
// under its limit, the monotone rule when a higher limit times a lower schedule worse, bad
// requests.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "frontier/classic_points.h"
#include "frontier/frontier.h"
#include "frontier/memory_floor.h"
#include "frontier/memory_limits.h"
#include "heuristics/waves.h"
#include "model/error.h"
#include "model/instance_io.h"
#include "model/simulator.h"
#include "model/validator.h"
#include "tests/brute_force.h"
#include "tests/test_paths.h"
#include "tests/test_util.h"

namespace optpipe::frontier {
namespace {

using test_support::GiB;

// Tiny instances within reach of the brute force: one stage per device, V, loop, two stages on
// one device of two, one device with two stages; every third without offload, the others with
// offload levels {0, 0.5, 1} (or {0, 0.5}) on some stages; random costs and static memory.
std::vector<Instance> tiny_instances(int wanted) {
  std::mt19937 rng(2211);
  std::uniform_real_distribution<double> transfer(0.2, 3.0), stat(0.0, 2.0);
  const std::vector<std::vector<int>> placements{{0, 1}, {0, 1, 1, 0}, {0, 1, 0, 1}, {0, 0, 1}, {0, 0}};
  std::vector<Instance> out;
  for (int i = 0; i < 5000 && static_cast<int>(out.size()) < wanted; ++i) {
    const auto& devices = placements[static_cast<std::size_t>(i) % placements.size()];
    const int S = static_cast<int>(devices.size());
    Instance inst = test_support::uniform_instance(S, S == 4 ? 1 + i % 2 : 2, 1, 1, 1);
    inst.split_backward = (i / 5) % 2 == 0;
    inst.devices.resize(static_cast<std::size_t>(*std::max_element(devices.begin(), devices.end()) + 1));
    for (int s = 0; s < S; ++s) inst.stages[s].device = devices[static_cast<std::size_t>(s)];
    test_support::randomise_costs(inst, rng);
    for (auto& d : inst.devices) d.static_memory = stat(rng) * GiB;
    if (i % 3 != 0) {
      inst.offload_levels = i % 4 == 0 ? std::vector<double>{0.0, 0.5} : std::vector<double>{0.0, 0.5, 1.0};
      for (auto& st : inst.stages) {
        if (rng() % 3 == 0) continue;
        st.offload = transfer(rng);
        st.reload = transfer(rng);
      }
    }
    if (test_support::count_schedules(inst, 30'000) > 30'000) continue;
    inst.name = "tiny-" + std::to_string(i) + " (" + to_string(inst.placement()) + ")";
    out.push_back(std::move(inst));
  }
  return out;
}

// What the floor would be if nothing could be offloaded: static + every activation of the device.
double floor_without_offload(const Instance& inst) {
  std::vector<double> need(inst.devices.size());
  for (std::size_t d = 0; d < need.size(); ++d) need[d] = inst.devices[d].static_memory;
  for (const Stage& st : inst.stages) need[st.device] += st.activation;
  return *std::max_element(need.begin(), need.end());
}

TEST(MemoryFloor, NoScheduleBelowItOneAtItByBruteForce) {
  const std::vector<Instance> cases = tiny_instances(30);
  ASSERT_EQ(cases.size(), 30u);
  int lowered_by_offload = 0, multi_stage = 0;
  for (const Instance& inst : cases) {
    SCOPED_TRACE(inst.name);
    const MemoryFloor f = memory_floor(inst);
    ASSERT_TRUE(f.proven) << f.witness;
    EXPECT_EQ(f.limit, f.lower);
    const auto at = test_support::brute_force_optimum(with_memory_limit(inst, f.limit), 30'000);
    ASSERT_FALSE(at.aborted);
    EXPECT_TRUE(at.feasible) << "no schedule at the floor " << f.limit;
    // The simulator tolerates 1 byte of rounding; 1 KiB below is truly below.
    const auto below = test_support::brute_force_optimum(with_memory_limit(inst, f.limit - 1024), 30'000);
    EXPECT_FALSE(below.feasible) << "a schedule 1 KiB below the floor " << f.limit << ": "
                                 << below.best.num_actions() << " actions, makespan " << below.optimum;
    lowered_by_offload += f.limit < floor_without_offload(inst) - 1 ? 1 : 0;
    multi_stage += inst.placement() != Placement::kOnePerDevice ? 1 : 0;
  }
  // The cases cover what the argument is about: offload below the no-offload floor, several stages
  // on a device.
  EXPECT_GE(lowered_by_offload, 5);
  EXPECT_GE(multi_stage, 15);
}

TEST(MemoryFloor, OneStagePerDeviceIsStaticPlusOneActivation) {
  Instance inst = test_support::uniform_instance(3, 4, 1, 1, 1);
  inst.devices[1].static_memory = 3 * GiB;
  inst.stages[2].activation = 2.5 * GiB;
  const MemoryFloor f = memory_floor(inst);
  EXPECT_EQ(f.device, 1);
  EXPECT_EQ(f.stage, 1);
  EXPECT_DOUBLE_EQ(f.limit, 4 * GiB);
  EXPECT_NE(f.explain().find("device 1 (stage 1): static 3.00 GiB + stage 1's activation 1.00 GiB = 4.00 GiB"),
            std::string::npos)
      << f.explain();
  // obviously_infeasible (model/validator.h) draws the same line.
  EXPECT_FALSE(obviously_infeasible(with_memory_limit(inst, f.limit)));
  EXPECT_TRUE(obviously_infeasible(with_memory_limit(inst, f.limit - 1024)));
}

// 1F1B, ZB-H1 and ZB-H2 fit from the Zero Bubble paper's peaks on ([ZB] §2, heuristics_test.cc
// holds the per-stage formulas): device 0 holds p, p and 2p - 1 activations M_B.
TEST(ClassicPoints, LimitsAreTheirSimulatedPeaks) {
  const int p = 4, m = 8;
  Instance inst = test_support::uniform_instance(p, m, 1, 1.2, 0.8, 0.05, 2 * GiB, 0.5 * GiB, 10 * GiB);
  for (auto& st : inst.stages) st.offload = st.reload = 0.5;
  for (auto& d : inst.devices) d.static_memory = 4 * GiB;
  const std::vector<ClassicPoint> points = classic_points(inst);
  ASSERT_EQ(points.size(), 4u);
  const std::vector<double> expected{4 * GiB + p * 2 * GiB, 4 * GiB + p * 2 * GiB, 4 * GiB + (2 * p - 1) * 2 * GiB};
  for (std::size_t k = 0; k < points.size(); ++k) {
    const ClassicPoint& c = points[k];
    SCOPED_TRACE(c.title);
    ASSERT_TRUE(c.schedule) << c.reason;
    if (k < expected.size()) EXPECT_NEAR(c.peak, expected[k], 1.0);
    // The peak as simulated here, without waits, and the makespan there.
    const SimResult free = simulate(inst, *c.schedule, SimOptions::quiet(false));
    EXPECT_DOUBLE_EQ(c.peak, *std::max_element(free.peak_memory.begin(), free.peak_memory.end()));
    EXPECT_DOUBLE_EQ(c.makespan, free.makespan);
    // At the peak it fits, as fast.
    const Validation at = validate(with_memory_limit(inst, c.peak), *c.schedule);
    ASSERT_TRUE(at.valid()) << at.violations.front().message;
    EXPECT_DOUBLE_EQ(at.sim->makespan, c.makespan);
    // Below it, it stops fitting: the fixed patterns deadlock (nothing in flight frees memory for
    // a waiting forward); PipeOffload waits for its offloads, so it runs slower or not at all.
    const Validation below = validate(with_memory_limit(inst, c.peak - 1024), *c.schedule);
    if (c.schedule->has_offload()) {
      EXPECT_TRUE(!below.valid() || below.sim->makespan > c.makespan);
    } else {
      EXPECT_FALSE(below.valid());
    }
  }
  EXPECT_LT(points[3].peak, points[0].peak) << "PipeOffload offloads: it needs less than 1F1B";
}

TEST(ClassicPoints, APlacementTheyDoNotSupportGivesTheReason) {
  Instance inst = test_support::uniform_instance(4, 4, 1, 1, 1);
  inst.devices.resize(2);
  for (int s = 0; s < 4; ++s) inst.stages[s].device = s < 2 ? s : 3 - s;  // V
  const std::vector<ClassicPoint> points = classic_points(inst);
  ASSERT_FALSE(points[0].schedule);
  EXPECT_FALSE(points[0].reason.empty());
}

// Short solves: a node limit per solve and a few seconds in all.
FrontierOptions quick(int steps, double seconds) {
  FrontierOptions o;
  o.steps = steps;
  o.time_limit = seconds;
  o.solve.node_limit = 2000;
  return o;
}

void expect_sound(const Instance& inst, const FrontierResult& r) {
  ASSERT_FALSE(r.points.empty());
  EXPECT_DOUBLE_EQ(r.points.front().limit, r.floor.limit);
  EXPECT_DOUBLE_EQ(r.points.back().limit, r.high);
  const FrontierPoint* below = nullptr;
  for (const FrontierPoint& p : r.points) {
    SCOPED_TRACE("limit " + std::to_string(p.limit / GiB) + " GiB");
    if (below) EXPECT_GT(p.limit, below->limit);
    ASSERT_TRUE(p.has_schedule()) << p.note;
    // Monotone: more memory, never slower.
    if (below) EXPECT_LE(p.makespan, below->makespan);
    EXPECT_LE(p.bound, p.makespan + 1e-9);
    EXPECT_GT(p.bound, 0.0);
    // Valid under its limit, with the makespan reported.
    EXPECT_LE(p.run_limit, p.limit);
    const Validation v = validate(with_memory_limit(inst, p.run_limit), *p.schedule);
    ASSERT_TRUE(v.valid()) << v.violations.front().message;
    EXPECT_NEAR(v.sim->makespan, p.makespan, 1e-6);
    for (double peak : v.sim->peak_memory) EXPECT_LE(peak, p.limit + kMemoryTolerance);
    // Never worse than a classic schedule that fits.
    for (const ClassicPoint& c : r.classics) {
      if (c.schedule && c.peak <= p.limit) EXPECT_LE(p.makespan, c.makespan + 1e-9) << c.title;
    }
    below = &p;
  }
  ASSERT_TRUE(r.unconstrained && r.unconstrained->has_schedule());
  EXPECT_LE(r.points.back().makespan, r.unconstrained->makespan + 1e-9);
  EXPECT_TRUE(r.monotone());
}

TEST(Frontier, MonotoneAndEveryPointValidatesUnderItsLimit) {
  for (const char* name : {"hetero-4x8", "offload-fast-pcie-4x8"}) {
    SCOPED_TRACE(name);
    const Instance inst = load_instance(std::string(OPTPIPE_SOURCE_DIR) + "/instances/" + name + ".json");
    const FrontierResult r = compute_frontier(inst, quick(5, 4));
    EXPECT_EQ(r.points.size(), 5u);
    expect_sound(inst, r);
    // Memory pays: the floor is slower than the top.
    EXPECT_GT(r.points.front().makespan, r.points.back().makespan);
  }
}

// A point solver that answers with given schedules, to drive the sweep where a real solve
// would not go.
struct ScriptedSolver {
  std::vector<Schedule> answers;  // one per solve, in order (the last repeats)
  int calls = 0;
  FrontierPoint operator()(const PointRequest& q) {
    const Schedule& s = answers[std::min<std::size_t>(static_cast<std::size_t>(calls++), answers.size() - 1)];
    FrontierPoint p;
    const SimResult sim = simulate(q.instance, s, SimOptions::quiet());
    p.schedule = s;
    p.schedule->peak_memory = sim.peak_memory;
    p.makespan = sim.makespan;
    p.bound = 1;
    p.gap = (p.makespan - 1) / p.makespan;
    p.status = PointStatus::kFeasible;
    p.source = "script";
    return p;
  }
};

// When the higher limit's solve comes out slower than the lower one's, the higher point takes
// the lower schedule, run with memory capped at the lower limit.
TEST(Frontier, AHigherLimitNeverReportsASlowerMakespan) {
  const Instance inst = test_support::uniform_instance(3, 4, 1, 1, 1, 0.0, GiB, 0.5 * GiB);
  const Schedule fast = *classic_points(inst)[0].schedule;  // 1F1B, 3 activations on device 0
  const Schedule slow = wave_schedule(inst, 1, false);      // one microbatch at a time
  FrontierOptions o = quick(2, 0);
  o.low = 3 * GiB;
  o.high = 4 * GiB;
  auto script = std::make_shared<ScriptedSolver>();
  script->answers = {fast, slow};
  o.point_solver = [script](const PointRequest& q) { return (*script)(q); };
  const FrontierResult r = compute_frontier(inst, o);
  ASSERT_EQ(r.points.size(), 2u);
  const double fast_ms = simulate(inst, fast).makespan;
  ASSERT_GT(simulate(inst, slow).makespan, fast_ms);
  EXPECT_DOUBLE_EQ(r.points[1].makespan, fast_ms);
  EXPECT_DOUBLE_EQ(r.points[1].run_limit, 3 * GiB);
  EXPECT_NE(r.points[1].source.find("carried from 3.00 GiB"), std::string::npos) << r.points[1].source;
  EXPECT_EQ(r.carried, 1);
  EXPECT_TRUE(r.monotone());
}

TEST(Frontier, LimitsBelowTheFloorAreReportedNotSolved) {
  const Instance inst = test_support::uniform_instance(2, 3, 1, 1, 1, 0.0, GiB, 0.5 * GiB);  // floor 1 GiB
  FrontierOptions o = quick(3, 0);
  o.low = 0.5 * GiB;
  o.high = 1.5 * GiB;
  auto script = std::make_shared<ScriptedSolver>();
  script->answers = {wave_schedule(inst, 1, false)};
  o.point_solver = [script](const PointRequest& q) { return (*script)(q); };
  const FrontierResult r = compute_frontier(inst, o);
  ASSERT_EQ(r.points.size(), 3u);
  EXPECT_EQ(r.points[0].status, PointStatus::kBelowFloor);
  EXPECT_FALSE(r.points[0].has_schedule());
  EXPECT_NE(r.points[0].note.find("below the memory floor 1.00 GiB by 512 MiB (device 0, stage 0)"),
            std::string::npos)
      << r.points[0].note;
  EXPECT_TRUE(r.points[1].has_schedule());
  EXPECT_EQ(script->calls, 2);
}

// Stopped (Ctrl-C) before the sweep: no solve runs, and each limit gets the fastest schedule
// known to fit it (here the classic ones), without a bound.
TEST(Frontier, StoppedLimitsTakeTheFastestScheduleKnownToFit) {
  const Instance inst = test_support::uniform_instance(3, 6, 1, 1, 1, 0.0, GiB, 0.5 * GiB);
  std::atomic<bool> stop{true};
  FrontierOptions o = quick(3, 10);
  o.solve.stop = &stop;
  o.low = 2 * GiB;   // below 1F1B's 3 activations
  o.high = 5 * GiB;  // ZB-H2's 5
  o.point_solver = [](const PointRequest&) -> FrontierPoint { ADD_FAILURE() << "solved"; return {}; };
  const FrontierResult r = compute_frontier(inst, o);
  ASSERT_EQ(r.points.size(), 3u);
  EXPECT_TRUE(r.interrupted);
  EXPECT_FALSE(r.points[0].has_schedule());
  EXPECT_EQ(r.points[0].note, "not solved: stopped");
  const std::vector<ClassicPoint> classics = classic_points(inst);
  ASSERT_TRUE(r.points[1].has_schedule());  // 3.5 GiB: 1F1B and ZB-H1 fit, ZB-H1 is faster
  EXPECT_DOUBLE_EQ(r.points[1].makespan, classics[1].makespan);
  ASSERT_TRUE(r.points[2].has_schedule());  // 5 GiB: ZB-H2
  EXPECT_DOUBLE_EQ(r.points[2].makespan, classics[2].makespan);
  EXPECT_EQ(r.points[2].bound, 0.0);
  EXPECT_TRUE(r.monotone());
}

std::string error_of(const Instance& inst, const FrontierOptions& o) {
  try {
    compute_frontier(inst, o);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Frontier, ImpossibleRequestsAreErrorsThatSayWhy) {
  Instance inst = test_support::uniform_instance(2, 3, 1, 1, 1, 0.0, GiB, 0.5 * GiB);
  inst.devices[1].static_memory = 2 * GiB;  // the floor: device 1, 3 GiB
  FrontierOptions o = quick(3, 0);
  o.point_solver = [](const PointRequest&) -> FrontierPoint { ADD_FAILURE() << "solved"; return {}; };
  o.low = 8 * GiB;
  o.high = 6 * GiB;
  EXPECT_EQ(error_of(inst, o), "limits 8.00 GiB..6.00 GiB: the lower end is above the upper end");
  o.low = 1 * GiB;
  o.high = 2.5 * GiB;
  EXPECT_EQ(error_of(inst, o),
            "limits 1.00 GiB..2.50 GiB: every limit is below the memory floor 3.00 GiB, 512 MiB above the upper end: "
            "device 1 (stage 1): static 2.00 GiB + stage 1's activation 1.00 GiB = 3.00 GiB; no schedule fits below it");
  o.high = 4 * GiB;
  o.steps = 0;
  EXPECT_EQ(error_of(inst, o), "steps: must be at least 1, not 0");
}

TEST(LimitRange, ParsesEndsWithUnitsAndNamesWhatIsWrong) {
  const LimitRange r = parse_limit_range("20GiB..80 GiB");
  EXPECT_EQ(*r.low, 20 * GiB);
  EXPECT_EQ(*r.high, 80 * GiB);
  EXPECT_FALSE(parse_limit_range("..80GiB").low);
  EXPECT_FALSE(parse_limit_range("20GiB..").high);
  auto error = [](const char* text) {
    try {
      parse_limit_range(text);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(error("20..80GiB").find("--limits '20..80GiB': the lower end '20': "), std::string::npos)
      << error("20..80GiB");
  EXPECT_NE(error("20GiB").find("expected LOW..HIGH with units"), std::string::npos);
  EXPECT_NE(error("0GiB..8GiB").find("the lower end '0GiB': must be more than 0 bytes"), std::string::npos);
  EXPECT_NE(error("1GiB..x").find("the upper end 'x'"), std::string::npos);
  EXPECT_EQ(limit_grid(2, 4, 3), (std::vector<double>{2, 3, 4}));
  EXPECT_EQ(limit_grid(2, 2, 5), (std::vector<double>{2}));
}

}  // namespace
}  // namespace optpipe::frontier
