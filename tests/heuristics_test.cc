// Tests of the one-stage-per-device baselines (GPipe, 1F1B, ZB-H1, ZB-H2), of run_heuristic() and
// run_all_heuristics(), properties every heuristic must have on random instances, and a brute-force
// differential test of the offload editing that PipeOffload and AdaOffload build on.
//
// 1. Closed forms on uniform instances (one stage per device, equal stage times), from the papers'
//    formulas and first principles (../shared/background/schedules.md §1.1, §1.2, §1.4, §1.5):
//    1F1B's makespan, ZB-H1's and ZB-H2's bubbles in the Zero Bubble paper's per-device-span sense,
//    and every schedule's peak activation memory per stage.
// 2. run_heuristic: reasons a person can act on; run_all_heuristics: the best feasible makespan.
// 3. Properties on many random instances (tight and unlimited memory, V / loop / custom placements,
//    split and fused backward): outputs validate, fit in memory, carry the simulation's numbers.
// 4. offload_edit against brute force: every insertion position the validator accepts for R(s,j)
//    is exactly reload_range(), and set_offload() keeps the lists well formed at every position.
// Expectations come from formulas or from the validator as an oracle, never from running the code.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "model/bytes.h"
#include "model/simulator.h"
#include "model/validator.h"
#include "heuristics/ada_offload.h"
#include "heuristics/gpipe.h"
#include "heuristics/heuristic.h"
#include "heuristics/offload_edit.h"
#include "heuristics/one_f_one_b.h"
#include "heuristics/pipe_offload.h"
#include "heuristics/registry.h"
#include "heuristics/zb_greedy.h"
#include "heuristics/zb_handcrafted.h"
#include "search/solver.h"
#include "model/instance_io.h"
#include "tests/case_range.h"
#include "tests/test_paths.h"
#include "tests/test_util.h"

namespace optpipe {
namespace {

using test_support::case_range_name;
using test_support::case_ranges;
using test_support::CaseRange;
using test_support::GiB;

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Times {
  double f, b, w;
};

// Simulates with timeline and memory curves; `sch` must be well formed.
SimResult run_sim(const Instance& inst, const Schedule& sch) {
  const auto violations = check_structure(inst, sch);
  EXPECT_TRUE(violations.empty()) << violations.front().message;
  return simulate(inst, sch);
}

Schedule build_or_fail(const Heuristic& h, const Instance& inst) {
  Built b = h.build(inst);
  EXPECT_TRUE(b.schedule) << h.title() << ": " << b.reason;
  return b.schedule ? *b.schedule : Schedule{};
}

// ---------------------------------------------------------------------------------------------
// 1. Closed forms.

// 1F1B with W right after its B (schedules.md §1.2, split backward so B(s-1) waits only for B(s)):
// the last stage starts at (p-1)(F+c) and then runs its F, B, W back to back, m(F+B+W); its last B
// ends T_W before that, and the last microbatch's B travels back through p-1 stages, (p-1)(B+c),
// before stage 0 runs the final W. Makespan = m(F+B+W) + (p-1)(F+B+2c). The last stage never
// waits when comm is small: F(j+p-s) leaves stage s after its B(j), W(j) and reaches the last
// stage with a slack of (p-s-1)(T_W - 2c), so the formula holds exactly for c <= T_W / 2 (and is
// a lower bound otherwise: it is the length of a path of the dependency graph plus list order).
double one_f_one_b_makespan(int p, int m, const Times& t, double c) {
  return m * (t.f + t.b + t.w) + (p - 1) * (t.f + t.b + 2 * c);
}

const std::vector<Times>& unequal_times() {
  static const std::vector<Times> times = {
      {1, 1, 1}, {1, 2, 1}, {1.3, 2.1, 0.7}, {2, 1, 0.5}, {0.6, 1.4, 1.1}};
  return times;
}

std::vector<int> microbatch_counts(int p) {
  std::vector<int> ms = {1, 2, p - 1, p, p + 1, 2 * p, 3 * p + 1};
  ms.erase(std::remove_if(ms.begin(), ms.end(), [](int m) { return m < 1; }), ms.end());
  std::sort(ms.begin(), ms.end());
  ms.erase(std::unique(ms.begin(), ms.end()), ms.end());
  return ms;
}

TEST(Heuristics, OneFOneBMakespanWithoutComm) {
  for (int p : {1, 2, 3, 4, 6, 8}) {
    for (int m : microbatch_counts(p)) {
      for (const Times& t : unequal_times()) {
        const Instance inst = test_support::uniform_instance(p, m, t.f, t.b, t.w);
        const Schedule sch = build_or_fail(OneFOneB(), inst);
        const SimResult r = run_sim(inst, sch);
        ASSERT_TRUE(r.feasible) << r.reason;
        EXPECT_NEAR(r.makespan, one_f_one_b_makespan(p, m, t, 0), 1e-9)
            << "p=" << p << " m=" << m << " F=" << t.f << " B=" << t.b << " W=" << t.w;
      }
    }
  }
}

TEST(Heuristics, OneFOneBMakespanWithComm) {
  for (int p : {2, 3, 4, 6, 8}) {
    for (int m : microbatch_counts(p)) {
      for (const Times& t : unequal_times()) {
        for (double c : {0.05, t.w / 4, t.w / 2}) {
          const Instance inst = test_support::uniform_instance(p, m, t.f, t.b, t.w, c);
          const SimResult r = run_sim(inst, build_or_fail(OneFOneB(), inst));
          ASSERT_TRUE(r.feasible) << r.reason;
          EXPECT_NEAR(r.makespan, one_f_one_b_makespan(p, m, t, c), 1e-9)
              << "p=" << p << " m=" << m << " F=" << t.f << " B=" << t.b << " W=" << t.w << " c=" << c;
        }
        // Comm above T_W / 2: still a lower bound (a path through the dependency graph).
        const double big = 2 * t.w;
        const Instance inst = test_support::uniform_instance(p, m, t.f, t.b, t.w, big);
        const SimResult r = run_sim(inst, build_or_fail(OneFOneB(), inst));
        ASSERT_TRUE(r.feasible) << r.reason;
        EXPECT_GE(r.makespan, one_f_one_b_makespan(p, m, t, big) - 1e-9) << "p=" << p << " m=" << m;
      }
    }
  }
}

TEST(Heuristics, OneFOneBFusedBackwardBubble) {
  // [ZB] Table 2: with a fused backward the bubble is (p-1)(T_F+T_B+T_W), the makespan
  // (m+p-1)(T_F+T_B+T_W) (the unsplit B lasts backward + weight and holds the whole chain).
  for (int p : {2, 4, 5}) {
    for (int m : {p, 2 * p + 1}) {
      Instance inst = test_support::uniform_instance(p, m, 1.0, 1.5, 0.5);
      inst.split_backward = false;
      for (Stage& st : inst.stages) st.weight_activation = 0;
      const Schedule sch = build_or_fail(OneFOneB(), inst);
      const SimResult r = run_sim(inst, sch);
      ASSERT_TRUE(r.feasible) << r.reason;
      EXPECT_NEAR(test_support::span_bubble(sch, r), (p - 1) * 3.0, 1e-9) << "p=" << p << " m=" << m;
      EXPECT_NEAR(r.makespan, (m + p - 1) * 3.0, 1e-9) << "p=" << p << " m=" << m;
    }
  }
}

// ZB-H1 and ZB-H2 bubbles, [ZB] Table 2 and schedules.md §1.4/§1.5, comm 0.
const std::vector<Times>& zb_times() {
  static const std::vector<Times> times = {{1, 1, 1}, {1, 1.5, 0.5}, {1.2, 1, 0.8}, {1, 2, 1}};
  return times;
}

TEST(Heuristics, ZbH1BubbleClosedForm) {
  for (int p : {2, 3, 4, 6, 8}) {
    for (int m : {p, p + 1, 2 * p, 3 * p + 2}) {
      for (const Times& t : zb_times()) {
        const double expected = (p - 1) * (t.f + t.b - t.w);
        if (expected < 0) continue;
        const Instance inst = test_support::uniform_instance(p, m, t.f, t.b, t.w);
        const Schedule sch = build_or_fail(ZbH1(), inst);
        const SimResult r = run_sim(inst, sch);
        ASSERT_TRUE(r.feasible) << r.reason;
        EXPECT_NEAR(test_support::span_bubble(sch, r), expected, 1e-9)
            << "p=" << p << " m=" << m << " F=" << t.f << " B=" << t.b << " W=" << t.w;
      }
    }
  }
}

TEST(Heuristics, ZbH2BubbleClosedForm) {
  for (int p : {2, 3, 4, 6, 8}) {
    for (int m : {2 * p - 1, 2 * p, 3 * p + 1}) {
      for (const Times& t : zb_times()) {
        const double expected = (p - 1) * (t.f + t.b - 2 * t.w);
        if (expected < 0) continue;
        const Instance inst = test_support::uniform_instance(p, m, t.f, t.b, t.w);
        const Schedule sch = build_or_fail(ZbH2(), inst);
        const SimResult r = run_sim(inst, sch);
        ASSERT_TRUE(r.feasible) << r.reason;
        EXPECT_NEAR(test_support::span_bubble(sch, r), expected, 1e-9)
            << "p=" << p << " m=" << m << " F=" << t.f << " B=" << t.b << " W=" << t.w;
      }
    }
  }
}

TEST(Heuristics, ZbH1AndH2BeatOneFOneBAtEqualTimes) {
  // [ZB] Table 2 at T_F = T_B = T_W = 1: 1F1B's per-device-span bubble with W right after B is
  // (p-1)(T_F+T_B) = 2(p-1) on stage 0, ZB-H1's (p-1), ZB-H2's 0.
  for (int p : {2, 4, 8}) {
    const Instance inst = test_support::uniform_instance(p, 3 * p, 1, 1, 1);
    const Schedule a = build_or_fail(OneFOneB(), inst), h1 = build_or_fail(ZbH1(), inst),
                   h2 = build_or_fail(ZbH2(), inst);
    EXPECT_NEAR(test_support::span_bubble(a, run_sim(inst, a)), 2.0 * (p - 1), 1e-9);
    EXPECT_NEAR(test_support::span_bubble(h1, run_sim(inst, h1)), 1.0 * (p - 1), 1e-9);
    EXPECT_NEAR(test_support::span_bubble(h2, run_sim(inst, h2)), 0.0, 1e-9);
  }
}

// Peak activation bytes of device d (static memory 0 in uniform instances).
double peak(const Instance& inst, const Schedule& sch, int d) {
  const SimResult r = run_sim(inst, sch);
  EXPECT_TRUE(r.feasible) << r.reason;
  return r.feasible ? r.peak_memory[d] - inst.devices[d].static_memory : -1;
}

TEST(Heuristics, PeakActivationsPerStage) {
  // A device's memory changes only through its own list, so its peak is the largest prefix sum:
  //   1F1B  (W right after B):      min(p-s, m)·M_B
  //   ZB-H1 (m >= p):               (p-s)·M_B + s·M_W       ([ZB] §2.3 with stage i = s+1)
  //   ZB-H2 (m >= 2p-1):            (2p-2s-1)·M_B + 2s·M_W
  //   GPipe:                        m·M_B
  // M_W = 0.3 M_B so that no two formulas coincide by accident.
  const double mb = GiB, mw = 0.3 * GiB;
  for (int p : {1, 2, 3, 4, 7}) {
    for (int m : {1, p - 1, p, p + 2, 2 * p - 1, 2 * p + 3}) {
      if (m < 1) continue;
      const Instance inst = test_support::uniform_instance(p, m, 1.1, 1.7, 0.6, 0.0, mb, mw);
      const Schedule a = build_or_fail(OneFOneB(), inst), g = build_or_fail(GPipe(), inst);
      const Schedule h1 = build_or_fail(ZbH1(), inst), h2 = build_or_fail(ZbH2(), inst);
      for (int s = 0; s < p; ++s) {
        const std::string where =
            "p=" + std::to_string(p) + " m=" + std::to_string(m) + " s=" + std::to_string(s);
        EXPECT_NEAR(peak(inst, a, s), std::min(p - s, m) * mb, 1.0) << "1F1B " << where;
        EXPECT_NEAR(peak(inst, g, s), m * mb, 1.0) << "GPipe " << where;
        if (m >= p) {
          EXPECT_NEAR(peak(inst, h1, s), (p - s) * mb + s * mw, 1.0) << "ZB-H1 " << where;
        }
        if (m >= 2 * p - 1) {
          EXPECT_NEAR(peak(inst, h2, s), (2 * p - 2 * s - 1) * mb + 2 * s * mw, 1.0) << "ZB-H2 " << where;
        }
      }
    }
  }
}

TEST(Heuristics, GPipePeakOnAnyPlacement) {
  // GPipe runs every forward of a device before its first backward: peak = m · Σ M_B of its stages.
  std::mt19937 rng(11);
  test_support::RandomInstanceOptions opt;
  opt.max_devices = 5;
  for (int i = 0; i < 40; ++i) {
    const Instance inst = test_support::random_instance(rng, opt);
    const Schedule sch = build_or_fail(GPipe(), inst);
    const SimResult r = run_sim(inst, sch);
    ASSERT_TRUE(r.feasible) << r.reason;
    for (int d = 0; d < inst.num_devices(); ++d) {
      double sum = 0;
      for (const Stage& st : inst.stages) sum += st.device == d ? st.activation : 0.0;
      EXPECT_NEAR(r.peak_memory[d], inst.devices[d].static_memory + inst.microbatches * sum, 1.0);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// 2. run_heuristic and run_all_heuristics.

// p = 4 uniform stages of 8 GiB activations on devices with 20 GiB static memory.
Instance tight_uniform(double limit) {
  Instance inst = test_support::uniform_instance(4, 8, 1, 1, 1, 0.0, 8 * GiB, 4 * GiB);
  for (Device& d : inst.devices) {
    d.static_memory = 20 * GiB;
    d.memory_limit = limit;
  }
  return inst;
}

// The pieces a shortfall reason must carry, in this order: who needs how much on which device,
// and the limit; `activations` is the count of activations the peak holds ("4.0").
void expect_shortfall(const std::string& reason, int device, double needed, const std::string& activations,
                      double limit) {
  const std::size_t who = reason.find("1F1B needs ");
  const std::size_t where = reason.find("on device " + std::to_string(device));
  const std::size_t over = reason.find("> limit " + format_bytes(limit));
  EXPECT_EQ(who, 0u) << reason;
  EXPECT_NE(where, std::string::npos) << reason;
  EXPECT_NE(over, std::string::npos) << reason;
  if (where != std::string::npos && over != std::string::npos) {
    EXPECT_LT(where, over) << reason;
  }
  EXPECT_NE(reason.find(format_bytes(needed)), std::string::npos) << reason;
  EXPECT_NE(reason.find(activations + " activations"), std::string::npos) << reason;
  EXPECT_NE(reason.find(format_bytes(20 * GiB)), std::string::npos) << reason << ": static memory";
}

TEST(Heuristics, RunHeuristicExplainsAOneFOneBShortfall) {
  // 1F1B's stage s needs static + (p-s) activations: 52 GiB on device 0, 44 on 1, 36 on 2, 28 on 3.
  {
    const HeuristicResult r = run_heuristic(OneFOneB(), tight_uniform(48 * GiB));
    EXPECT_FALSE(r.ok());
    EXPECT_FALSE(r.sim.feasible);
    expect_shortfall(r.reason, 0, 52 * GiB, "4.0", 48 * GiB);
    EXPECT_EQ(r.reason.find("device 1"), std::string::npos) << r.reason << ": device 1 fits (44 GiB)";
  }
  {
    // Devices 0 and 1 are over: the reason leads with device 0 (the furthest over) and must
    // account for device 1, by name or by count; devices 2 and 3 fit.
    const HeuristicResult r = run_heuristic(OneFOneB(), tight_uniform(40 * GiB));
    EXPECT_FALSE(r.ok());
    expect_shortfall(r.reason, 0, 52 * GiB, "4.0", 40 * GiB);
    const bool names_device_1 = r.reason.find("device 1") != std::string::npos;
    EXPECT_TRUE(names_device_1 || r.reason.find("1 more device") != std::string::npos) << r.reason;
    EXPECT_EQ(r.reason.find("device 2"), std::string::npos) << r.reason;
    EXPECT_EQ(r.reason.find("device 3"), std::string::npos) << r.reason;
  }
  {
    // At exactly 52 GiB it fits and carries the simulation's numbers.
    const HeuristicResult r = run_heuristic(OneFOneB(), tight_uniform(52 * GiB));
    ASSERT_TRUE(r.ok()) << r.reason;
    EXPECT_NEAR(r.schedule->peak_memory[0], 52 * GiB, 1.0);
    EXPECT_NEAR(*r.schedule->makespan, one_f_one_b_makespan(4, 8, {1, 1, 1}, 0), 1e-9);
  }
}

Instance two_chunk_instance(bool v_placement, bool split) {
  Instance inst = test_support::uniform_instance(4, 6, 1, 1, 1);
  inst.devices.resize(2);
  for (int s = 0; s < 4; ++s) inst.stages[s].device = v_placement ? (s < 2 ? s : 3 - s) : s % 2;
  inst.split_backward = split;
  if (!split) {
    for (Stage& st : inst.stages) st.weight_activation = 0;
  }
  return inst;
}

TEST(Heuristics, RunHeuristicReturnsTheReasonAHeuristicDoesNotApply) {
  const Instance v = two_chunk_instance(true, true);
  ASSERT_EQ(v.placement(), Placement::kV);
  for (const char* name : {"1f1b", "zb-h1", "zb-h2"}) {
    const Heuristic* h = find_heuristic(name);
    ASSERT_NE(h, nullptr) << name;
    const HeuristicResult r = run_heuristic(*h, v);
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.reason, h->title() + " needs one stage per device with stage s on device s (this instance's "
                                     "placement: " + to_string(Placement::kV) + ")");
  }
  Instance fused = test_support::uniform_instance(3, 4, 1, 1, 1);
  fused.split_backward = false;
  for (Stage& st : fused.stages) st.weight_activation = 0;
  for (const char* name : {"zb-h1", "zb-h2"}) {
    const HeuristicResult r = run_heuristic(*find_heuristic(name), fused);
    EXPECT_FALSE(r.ok());
    EXPECT_NE(r.reason.find("needs a split backward"), std::string::npos) << r.reason;
  }
  // PipeOffload needs an offloadable stage.
  const HeuristicResult po = run_heuristic(PipeOffload(), test_support::uniform_instance(3, 4, 1, 1, 1));
  EXPECT_FALSE(po.ok());
  EXPECT_NE(po.reason.find("no stage of this instance can be offloaded"), std::string::npos) << po.reason;
  EXPECT_EQ(find_heuristic("no-such-heuristic"), nullptr);
}

// Under very tight memory (room for 1.5 activations, 16 GPUs) PipeOffload's variants that place
// each reload where the base timing hides it all deadlock; the late variant (every activation
// offloaded, each reload just before its B) fits, and beats the memory floor of waves by far.
TEST(Heuristics, PipeOffloadWithLateReloadsFitsWhereTheBaseTimingMisleads) {
  const Instance inst =
      load_instance(std::string(OPTPIPE_SOURCE_DIR) + "/instances/generated/bench-gpt3-14.6b-16x64-1.5act.json");
  const HeuristicResult po = run_heuristic(PipeOffload(), inst);
  ASSERT_TRUE(po.ok()) << po.reason;
  EXPECT_NE(po.detail.find("each reload just before its B"), std::string::npos) << po.detail;
  EXPECT_TRUE(check_structure(inst, *po.schedule).empty());
  const HeuristicResult waves = run_heuristic(*find_heuristic("waves"), inst);
  ASSERT_TRUE(waves.ok()) << waves.reason;
  EXPECT_LT(po.sim.makespan, 0.8 * waves.sim.makespan) << po.sim.makespan << " vs waves " << waves.sim.makespan;
  // Every reload sits right before its B.
  for (const auto& list : po.schedule->devices) {
    for (std::size_t k = 0; k < list.size(); ++k) {
      if (list[k].type != OpType::R) continue;
      ASSERT_LT(k + 1, list.size());
      EXPECT_EQ(list[k + 1].type, OpType::B);
      EXPECT_EQ(list[k + 1].stage, list[k].stage);
      EXPECT_EQ(list[k + 1].mb, list[k].mb);
    }
  }
}

// AdaOffload under a deadline gives up a repair whose projected rest passes it: after 2 s with
// the first overflow a quarter into the schedule, the rest at that pace takes 6 s more. Not
// before kAdaGiveUpAfter (the projection has not settled), nor without a measured progress.
TEST(Heuristics, AdaOffloadGivesUpOnlyWhereItsProjectionPassesTheDeadline) {
  EXPECT_TRUE(ada_repair_would_miss(2.0, 0.25, 5.9));
  EXPECT_FALSE(ada_repair_would_miss(2.0, 0.25, 6.1));
  EXPECT_FALSE(ada_repair_would_miss(2.0, 0.75, 1.0));  // 0.67 s more
  EXPECT_TRUE(ada_repair_would_miss(2.0, 0.75, 0.5));
  EXPECT_FALSE(ada_repair_would_miss(0.5 * kAdaGiveUpAfter, 0.01, 0.1));
  EXPECT_TRUE(ada_repair_would_miss(kAdaGiveUpAfter, 0.01, 0.1));
  EXPECT_FALSE(ada_repair_would_miss(5.0, 0.0, 0.1));
  EXPECT_FALSE(ada_repair_would_miss(5.0, 1.0, 0.1));
  EXPECT_FALSE(ada_repair_would_miss(5.0, 0.5, std::numeric_limits<double>::infinity()));
}

// The same instance: stage 0's GPU holds 4 activations of the 16 it has in flight, its neighbour
// in the PCIe group one. PipeOffload keeps some of stage 0's (spread over its microbatches) and
// offloads every activation of the stages with one slot that have two in flight; offloading stage
// 0's kept ones too, each reload just before its B, queues them on the shared D2H channel and is
// slower.
TEST(Heuristics, PipeOffloadKeepsWhatSpareMemoryHolds) {
  const Instance inst =
      load_instance(std::string(OPTPIPE_SOURCE_DIR) + "/instances/generated/bench-gpt3-14.6b-16x64-1.5act.json");
  const HeuristicResult po = run_heuristic(PipeOffload(), inst);
  ASSERT_TRUE(po.ok()) << po.reason;
  EXPECT_NE(po.detail.find("that spare memory cannot keep"), std::string::npos) << po.detail;
  const Schedule& sch = *po.schedule;
  EXPECT_TRUE(check_structure(inst, sch).empty());
  std::vector<int> kept;  // stage 0's microbatches without offload
  for (int j = 0; j < inst.microbatches; ++j) {
    if (offload_level(sch, 0, 0, j) == 0.0) kept.push_back(j);
  }
  EXPECT_GE(kept.size(), 4u);
  EXPECT_LE(kept.size(), static_cast<std::size_t>(inst.microbatches / 3));
  EXPECT_GT(kept.back() - kept.front(), inst.microbatches / 2) << "kept ones spread over the microbatches";
  // The stages with room for one activation offload all of theirs, or keep all where their base
  // never has two in flight (the last ones, whose round trip is short).
  int offloading_all = 0;
  for (int s = 1; s + 1 < inst.num_stages(); ++s) {
    int offloaded = 0;
    for (int j = 0; j < inst.microbatches; ++j) offloaded += offload_level(sch, s, s, j) == 1.0;
    EXPECT_TRUE(offloaded == 0 || offloaded == inst.microbatches) << "stage " << s << ": " << offloaded;
    offloading_all += offloaded == inst.microbatches;
  }
  EXPECT_GE(offloading_all, 10);
  Schedule all = sch;
  for (int j : kept) {
    const auto& list = all.devices[0];
    const int b = static_cast<int>(std::find_if(list.begin(), list.end(), [&](const Action& a) {
                                     return a.type == OpType::B && a.stage == 0 && a.mb == j;
                                   }) - list.begin());
    set_offload(all, 0, 0, j, 1.0, b);
  }
  Simulator sim(inst);
  const SimResult r = sim.run(all, SimOptions::quiet());
  ASSERT_TRUE(r.feasible) << r.reason;
  EXPECT_GT(r.makespan, po.sim.makespan + 10.0) << "all offloaded " << r.makespan << " vs kept " << po.sim.makespan;
}

// Heuristics that misbehave on purpose, to check run_heuristic's own contract.
class SilentFailure final : public Heuristic {
 public:
  std::string name() const override { return "silent"; }
  std::string title() const override { return "Silent"; }
  std::string description() const override { return "fails without a reason"; }
  Built build(const Instance&, const RunLimits&) const override { return Built::fail(""); }
};

class BrokenLists final : public Heuristic {
 public:
  std::string name() const override { return "broken"; }
  std::string title() const override { return "Broken"; }
  std::string description() const override { return "forgets every backward"; }
  Built build(const Instance& inst, const RunLimits&) const override {
    Schedule s;
    s.devices.assign(inst.num_devices(), {});
    for (int st = 0; st < inst.num_stages(); ++st) {
      for (int j = 0; j < inst.microbatches; ++j) s.devices[inst.stages[st].device].push_back(make_f(st, j));
    }
    return Built::ok(std::move(s));
  }
};

TEST(Heuristics, RunHeuristicNamesBugsAndSilentFailures) {
  const Instance inst = test_support::uniform_instance(2, 2, 1, 1, 1);
  const HeuristicResult silent = run_heuristic(SilentFailure(), inst);
  EXPECT_FALSE(silent.ok());
  EXPECT_EQ(silent.reason, "Silent produced no schedule");
  const HeuristicResult broken = run_heuristic(BrokenLists(), inst);
  EXPECT_FALSE(broken.ok());
  EXPECT_EQ(broken.reason.rfind("internal error: Broken built an invalid schedule: ", 0), 0u)
      << broken.reason;
}

TEST(Heuristics, RunAllHeuristicsPicksTheSmallestFeasibleMakespan) {
  std::vector<Instance> cases;
  cases.push_back(test_support::uniform_instance(4, 8, 1, 1.5, 0.5));
  cases.push_back(two_chunk_instance(true, true));
  cases.push_back(two_chunk_instance(false, false));
  Instance tight = tight_uniform(44 * GiB);  // too small for 1F1B and GPipe
  for (Stage& st : tight.stages) {
    st.offload = 0.5;
    st.reload = 0.5;
  }
  cases.push_back(tight);
  for (const Instance& inst : cases) {
    int calls = 0;
    const BestResult all = run_all_heuristics(inst, false, [&](const HeuristicResult&) { ++calls; });
    EXPECT_EQ(calls, static_cast<int>(all_heuristics().size()));
    ASSERT_EQ(all.results.size(), all_heuristics().size());
    double smallest = kInf;
    int first_smallest = -1;
    for (std::size_t i = 0; i < all.results.size(); ++i) {
      const HeuristicResult& r = all.results[i];
      EXPECT_EQ(r.name, all_heuristics()[i]->name());
      if (!r.ok()) {
        EXPECT_FALSE(r.reason.empty()) << r.name;
        continue;
      }
      if (r.sim.makespan < smallest - 1e-6) {
        smallest = r.sim.makespan;
        first_smallest = static_cast<int>(i);
      }
    }
    ASSERT_GE(all.best, 0);
    ASSERT_NE(all.best_result(), nullptr);
    EXPECT_TRUE(all.best_result()->ok());
    EXPECT_NEAR(all.best_result()->sim.makespan, smallest, 1e-9);
    EXPECT_EQ(all.best, first_smallest) << "ties go to the earlier heuristic";
    // The parallel run gives the same results (the heuristics are deterministic).
    const BestResult par = run_all_heuristics(inst, true);
    EXPECT_EQ(par.best, all.best);
    for (std::size_t i = 0; i < all.results.size(); ++i) {
      EXPECT_EQ(par.results[i].ok(), all.results[i].ok()) << all.results[i].name;
      if (par.results[i].ok() && all.results[i].ok()) {
        EXPECT_EQ(par.results[i].sim.makespan, all.results[i].sim.makespan) << all.results[i].name;
      }
    }
  }
  // The tight case: 1F1B and GPipe do not fit (they need 52 and 84 GiB on device 0).
  const BestResult t = run_all_heuristics(cases.back(), false);
  EXPECT_FALSE(t.results[0].ok());
  EXPECT_FALSE(t.results[1].ok());
}

// With a lower bound, the heuristics that search run after the fixed patterns and not at all
// where one of those meets the bound; the best is the same schedule either way (they come later
// in the list, and none can be below the bound). The bound: the root's node bounds, as
// `optpipe solve` asks them before the heuristics.
TEST(Heuristics, RunAllHeuristicsSkipsTheSearchingOnesWhereAFixedPatternMeetsTheBound) {
  bool searching_seen = false;
  for (const auto& h : all_heuristics()) {
    if (h->searches()) searching_seen = true;
    EXPECT_TRUE(h->searches() || !searching_seen) << h->name() << " comes after a heuristic that searches";
  }
  ASSERT_TRUE(searching_seen);
  std::vector<Instance> cases;
  cases.push_back(test_support::uniform_instance(4, 8, 1, 1.5, 0.5));
  cases.push_back(load_instance(std::string(OPTPIPE_SOURCE_DIR) + "/instances/gpt-8x24.json"));
  cases.push_back(load_instance(std::string(OPTPIPE_SOURCE_DIR) + "/instances/uniform-4x8.json"));
  cases.push_back(load_instance(std::string(OPTPIPE_SOURCE_DIR) + "/instances/offload-fast-pcie-4x8.json"));
  cases.push_back(load_instance(std::string(OPTPIPE_SOURCE_DIR) + "/instances/v-4x8.json"));
  Instance tight = tight_uniform(44 * GiB);
  for (Stage& st : tight.stages) st.offload = st.reload = 0.5;
  cases.push_back(tight);
  SolveOptions ro;
  ro.stage_relaxation = false;
  ro.device_relaxation = false;
  int skipped = 0, ran = 0;
  for (const Instance& inst : cases) {
    const double bound = root_lower_bound(inst, kInf, ro).bound;
    ASSERT_GT(bound, 0) << inst.name;
    const BestResult plain = run_all_heuristics(inst, false);
    int calls = 0;
    const BestResult with = run_all_heuristics(inst, true, [&](const HeuristicResult&) { ++calls; }, {}, bound);
    EXPECT_EQ(calls, static_cast<int>(all_heuristics().size())) << inst.name;
    ASSERT_EQ(with.results.size(), plain.results.size());
    ASSERT_EQ(with.best, plain.best) << inst.name;
    ASSERT_GE(with.best, 0) << inst.name;
    EXPECT_EQ(with.best_result()->schedule->devices, plain.best_result()->schedule->devices) << inst.name;
    const bool met = plain.best_result()->sim.makespan <= bound + 1e-9 &&
                     !all_heuristics()[static_cast<std::size_t>(plain.best)]->searches();
    for (std::size_t i = 0; i < with.results.size(); ++i) {
      const HeuristicResult& r = with.results[i];
      EXPECT_EQ(r.name, all_heuristics()[i]->name());
      if (met && all_heuristics()[i]->searches()) {
        EXPECT_FALSE(r.ok()) << inst.name << " " << r.name;
        EXPECT_EQ(r.reason.rfind("not run: ", 0), 0u) << r.reason;
        continue;
      }
      EXPECT_EQ(r.ok(), plain.results[i].ok()) << inst.name << " " << r.name;
      if (r.ok() && plain.results[i].ok()) EXPECT_EQ(r.sim.makespan, plain.results[i].sim.makespan) << r.name;
    }
    (met ? skipped : ran) += 1;
  }
  EXPECT_GE(skipped, 2);  // gpt-8x24 and uniform-4x8: ZB-H2 meets the bound
  EXPECT_GE(ran, 2);      // the offload ones: no fixed pattern does
}

TEST(Heuristics, RunAllHeuristicsTiesGoToTheEarlierHeuristic) {
  // One stage, one microbatch: F, B, W is the only order, so every schedule lasts F+B+W and
  // GPipe, first in the list, wins.
  const Instance inst = test_support::uniform_instance(1, 1, 1, 2, 3);
  const BestResult all = run_all_heuristics(inst, false);
  ASSERT_EQ(all.best, 0);
  EXPECT_EQ(all.best_result()->name, "gpipe");
  for (const HeuristicResult& r : all.results) {
    if (r.ok()) {
      EXPECT_NEAR(r.sim.makespan, 6.0, 1e-9) << r.name;
    }
  }
}

TEST(Heuristics, RunAllHeuristicsBestIsMinusOneWhenNothingFits) {
  // One activation alone exceeds the limit (static 20 GiB + 8 GiB > 27 GiB): nothing can fit,
  // offload included (F allocates its whole activation when it starts).
  Instance inst = tight_uniform(27 * GiB);
  for (Stage& st : inst.stages) {
    st.offload = 0.5;
    st.reload = 0.5;
  }
  const BestResult all = run_all_heuristics(inst, false);
  EXPECT_EQ(all.best, -1);
  EXPECT_EQ(all.best_result(), nullptr);
  for (const HeuristicResult& r : all.results) {
    EXPECT_FALSE(r.ok()) << r.name;
    EXPECT_FALSE(r.reason.empty()) << r.name;
  }
}

// ---------------------------------------------------------------------------------------------
// 3. Properties on random instances.

bool is_memory_aware_offloader(const std::string& name) {
  return name == "pipe-offload" || name == "ada-offload" || name == "waves" || name == "periodic";
}

// Every check a produced schedule must pass; `what` names the case.
void expect_sound(const Instance& inst, const HeuristicResult& r, const std::string& what) {
  ASSERT_TRUE(r.ok());
  const Schedule& sch = *r.schedule;
  const Validation v = validate(inst, sch);
  ASSERT_TRUE(v.valid()) << what << ": " << v.violations.front().message;
  ASSERT_TRUE(v.sim && v.sim->feasible) << what;
  const SimResult& sim = *v.sim;
  for (int d = 0; d < inst.num_devices(); ++d) {
    EXPECT_LE(sim.peak_memory[d], inst.devices[d].memory_limit + kMemoryTolerance) << what << " device " << d;
    EXPECT_NEAR(sim.busy[d], inst.busy_time(d), 1e-9) << what;
    EXPECT_GE(sim.makespan, inst.busy_time(d) - 1e-9) << what << " device " << d;
  }
  // The informational fields are the simulation's.
  ASSERT_TRUE(sch.makespan && sch.bubble) << what;
  EXPECT_DOUBLE_EQ(*sch.makespan, sim.makespan) << what;
  EXPECT_DOUBLE_EQ(*sch.bubble, sim.bubble) << what;
  EXPECT_EQ(sch.peak_memory, sim.peak_memory) << what;
  EXPECT_EQ(sch.status, "feasible") << what;
  EXPECT_EQ(sch.instance, inst.name) << what;
  EXPECT_DOUBLE_EQ(r.sim.makespan, sim.makespan) << what;
  // Offloads only where allowed, at allowed levels, each with its R.
  int offloads = 0, reloads = 0;
  for (const auto& list : sch.devices) {
    for (const Action& a : list) {
      if (a.type == OpType::R) ++reloads;
      if (a.type != OpType::F || a.r <= 0) continue;
      ++offloads;
      EXPECT_TRUE(inst.stages[a.stage].offloadable()) << what << ": " << to_string(a);
      EXPECT_TRUE(inst.is_offload_level(a.r)) << what << ": " << to_string(a);
    }
  }
  EXPECT_EQ(offloads, reloads) << what;
  if (!is_memory_aware_offloader(r.name)) {
    EXPECT_EQ(offloads, 0) << what;
  }
}

// Every heuristic on 300 random instances, in ranges of them (tests/case_range.h).
using HeuristicsOnRandomInstances = test_support::CaseRangeTest;

TEST_P(HeuristicsOnRandomInstances, EveryOutputIsValidFitsAndCarriesItsSimulation) {
  const CaseRange range = GetParam();
  std::mt19937 rng(2024);
  int produced = 0, offloading = 0, tight_ok = 0;
  for (int i = 0; i < range.end; ++i) {
    test_support::RandomInstanceOptions opt;
    opt.tight_memory = i % 2 == 0;
    opt.offloadable_probability = i % 3 == 0 ? 1.0 : 0.5;
    if (i % 5 == 4) {
      opt.max_devices = 6;
      opt.max_microbatches = 12;
    }
    Instance inst = test_support::random_instance(rng, opt);
    inst.name = "random-" + std::to_string(i);
    if (!range.contains(i)) continue;  // drawn only to keep the engine in step
    for (const auto& h : all_heuristics()) {
      const HeuristicResult r = run_heuristic(*h, inst);
      const std::string what = h->name() + " on case " + std::to_string(i);
      if (!r.ok()) {
        EXPECT_FALSE(r.reason.empty()) << what;
        EXPECT_EQ(r.reason.find("internal error"), std::string::npos) << what << ": " << r.reason;
        // With unlimited memory GPipe, ZB greedy and AdaOffload always apply and fit, and the
        // one-stage-per-device patterns apply exactly on that placement (ZB-H* with split B).
        if (!opt.tight_memory) {
          EXPECT_TRUE(h->name() != "gpipe" && h->name() != "zb-greedy" && h->name() != "ada-offload")
              << what << ": " << r.reason;
          if (inst.placement() == Placement::kOnePerDevice) {
            EXPECT_TRUE(h->name() != "1f1b" && (!inst.split_backward || h->name().rfind("zb-h", 0) != 0))
                << what << ": " << r.reason;
          }
        }
        continue;
      }
      ++produced;
      if (opt.tight_memory) ++tight_ok;
      if (r.schedule->has_offload()) ++offloading;
      expect_sound(inst, r, what);
      if (HasFatalFailure()) return;
    }
  }
  // The random cases must exercise what they claim to.
  EXPECT_GT(produced, range.share(200));
  EXPECT_GT(tight_ok, range.share(40));
  EXPECT_GT(offloading, range.share(5));
}
INSTANTIATE_TEST_SUITE_P(Seed2024, HeuristicsOnRandomInstances, testing::ValuesIn(case_ranges(300, 3)),
                         case_range_name);

// build() itself (not only run_heuristic's filter) must return lists that complete under the
// limits, for ZB greedy, PipeOffload and AdaOffload, and for AdaOffload started from any random
// base order; on 200 random instances, in ranges of them.
using MemoryAwareHeuristics = test_support::CaseRangeTest;

TEST_P(MemoryAwareHeuristics, NeverReturnADeadlock) {
  const CaseRange range = GetParam();
  std::mt19937 rng(77);
  const std::vector<const Heuristic*> aware = {find_heuristic("zb-greedy"), find_heuristic("pipe-offload"),
                                               find_heuristic("ada-offload")};
  for (const Heuristic* h : aware) {
    ASSERT_NE(h, nullptr);
    EXPECT_TRUE(h->memory_aware()) << h->name();
  }
  int built = 0, from_random_base = 0;
  for (int i = 0; i < range.end; ++i) {
    test_support::RandomInstanceOptions opt;
    opt.tight_memory = true;
    opt.offloadable_probability = 0.8;
    if (i % 5 == 4) {
      opt.max_devices = 6;
      opt.max_microbatches = 12;
    }
    const Instance inst = test_support::random_instance(rng, opt);
    // The random order for AdaOffload, drawn here, before the builds (which draw nothing).
    const Schedule base = test_support::random_valid_schedule(inst, rng, 0.2);
    if (!range.contains(i)) continue;  // drawn only to keep the engine in step
    for (const Heuristic* h : aware) {
      const Built b = h->build(inst);
      if (!b.schedule) {
        EXPECT_FALSE(b.reason.empty()) << h->name();
        continue;
      }
      ++built;
      ASSERT_TRUE(check_structure(inst, *b.schedule).empty()) << h->name() << " case " << i;
      const SimOptions fast = SimOptions::quiet();
      const SimResult r = simulate(inst, *b.schedule, fast);
      EXPECT_TRUE(r.feasible) << h->name() << " case " << i << ": " << r.reason;
    }
    // AdaOffload repairing a random order (which may carry offloads of its own).
    const Built b = ada_offload_from(inst, base, "a random order");
    if (!b.schedule) continue;
    ++from_random_base;
    ASSERT_TRUE(check_structure(inst, *b.schedule).empty()) << "ada_offload_from case " << i;
    const SimResult r = simulate(inst, *b.schedule);
    EXPECT_TRUE(r.feasible) << "ada_offload_from case " << i << ": " << r.reason;
    for (int d = 0; d < inst.num_devices(); ++d) {
      EXPECT_LE(r.peak_memory[d], inst.devices[d].memory_limit + kMemoryTolerance);
    }
  }
  EXPECT_GT(built, range.share(40));
  EXPECT_GT(from_random_base, range.share(10));
}
INSTANTIATE_TEST_SUITE_P(Seed77, MemoryAwareHeuristics, testing::ValuesIn(case_ranges(200, 2)), case_range_name);

TEST(Heuristics, BestIsAtMostEveryFeasibleHeuristic) {
  // No order between the heuristics is assumed (AdaOffload may lose to ZB greedy and vice versa);
  // only "best" is compared with each of them.
  std::mt19937 rng(5);
  int found = 0;
  for (int i = 0; i < 100; ++i) {
    test_support::RandomInstanceOptions opt;
    opt.tight_memory = i % 3 != 0;
    const Instance inst = test_support::random_instance(rng, opt);
    const BestResult all = run_all_heuristics(inst, false);
    bool any = false;
    for (const HeuristicResult& r : all.results) any = any || r.ok();
    if (!any) {
      EXPECT_EQ(all.best, -1);
      continue;
    }
    ++found;
    ASSERT_GE(all.best, 0);
    const double best = all.results[all.best].sim.makespan;
    EXPECT_TRUE(all.results[all.best].ok());
    EXPECT_DOUBLE_EQ(*all.results[all.best].schedule->makespan, best);
    for (const HeuristicResult& r : all.results) {
      if (r.ok()) {
        EXPECT_LE(best, r.sim.makespan + 1e-9) << r.name << " case " << i;
      }
    }
  }
  EXPECT_GT(found, 15);
}

TEST(Heuristics, AdaOffloadWithUnlimitedMemoryIsTheBestBaseUnchanged) {
  // With memory to spare AdaOffload needs no offload: it keeps the fastest memory-oblivious base,
  // and every fixed-pattern heuristic's lists are among its bases, so it is at least as fast as
  // each of them.
  std::mt19937 rng(8);
  for (int i = 0; i < 40; ++i) {
    const Instance inst = test_support::random_instance(rng);
    const HeuristicResult ada = run_heuristic(AdaOffload(), inst);
    ASSERT_TRUE(ada.ok()) << ada.reason;
    EXPECT_FALSE(ada.schedule->has_offload()) << "case " << i;
    for (const auto& h : all_heuristics()) {
      if (h->memory_aware()) continue;
      const HeuristicResult r = run_heuristic(*h, inst);
      if (r.ok()) {
        EXPECT_LE(ada.sim.makespan, r.sim.makespan + 1e-9) << h->name() << " case " << i;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// 4. offload_edit against brute force.

// Request time of an R inserted before index `pos`: the end of the compute action before it.
double request_time(const std::vector<Action>& list, const std::vector<ActionTiming>& timeline, int pos) {
  for (int k = pos - 1; k >= 0; --k) {
    if (list[k].is_compute()) return timeline[k].end;
  }
  return 0;
}

TEST(Heuristics, OffloadEditMatchesBruteForceAtEveryPosition) {
  std::mt19937 rng(99);
  test_support::RandomInstanceOptions opt;
  opt.max_devices = 3;
  opt.max_microbatches = 4;
  opt.offloadable_probability = 0.7;
  int checked_positions = 0;
  for (int i = 0; i < 150; ++i) {
    const Instance inst = test_support::random_instance(rng, opt);
    const Schedule sch = test_support::random_valid_schedule(inst, rng, 0.4);
    ASSERT_TRUE(check_structure(inst, sch).empty());
    for (int d = 0; d < inst.num_devices(); ++d) {
      for (const Action& a : sch.devices[d]) {
        if (a.type != OpType::F || !inst.stages[a.stage].offloadable()) continue;
        const int s = a.stage, j = a.mb;
        const std::string what = "case " + std::to_string(i) + " " + to_string(a);
        // Removing the offload keeps the lists well formed.
        Schedule without = sch;
        set_offload(without, d, s, j, 0.0, 0);
        ASSERT_TRUE(check_structure(inst, without).empty()) << what;
        EXPECT_EQ(offload_level(without, d, s, j), 0.0);
        EXPECT_EQ(find_action(without.devices[d], OpType::R, s, j), -1) << what;
        const auto& list = without.devices[d];
        const int n = static_cast<int>(list.size());
        const int f = find_action(list, OpType::F, s, j);
        ASSERT_GE(f, 0);
        const auto [lo, hi] = reload_range(without, d, s, j);
        for (double level : inst.offload_levels) {
          if (level <= 0) continue;
          // Brute force: insert R(s,j) before every index and ask the validator.
          std::vector<int> accepted;
          for (int k = 0; k <= n; ++k) {
            Schedule trial = without;
            trial.devices[d][f].r = level;
            trial.devices[d].insert(trial.devices[d].begin() + k, make_r(s, j));
            if (check_structure(inst, trial).empty()) accepted.push_back(k);
          }
          ASSERT_FALSE(accepted.empty()) << what;
          EXPECT_EQ(accepted.front(), lo) << what;
          EXPECT_EQ(accepted.back(), hi) << what;
          EXPECT_EQ(static_cast<int>(accepted.size()), hi - lo + 1) << what << ": not contiguous";
          // set_offload at every position in the range puts R exactly there; outside it clamps.
          for (int pos = lo - 2; pos <= hi + 2; ++pos) {
            Schedule t = without;
            set_offload(t, d, s, j, level, pos);
            const auto v = check_structure(inst, t);
            ASSERT_TRUE(v.empty()) << what << " pos " << pos << ": " << v.front().message;
            EXPECT_EQ(find_action(t.devices[d], OpType::R, s, j), std::clamp(pos, lo, hi)) << what;
            EXPECT_EQ(offload_level(t, d, s, j), level);
            // Setting it again on the edited lists (R present) keeps them well formed too.
            set_offload(t, d, s, j, level, 0);
            EXPECT_TRUE(check_structure(inst, t).empty()) << what;
            ++checked_positions;
          }
          // latest_hidden_position: in the range, hidden if any position is, and the latest such.
          SimOptions free_run;
          free_run.enforce_memory_limit = false;
          free_run.record_memory = false;
          const SimResult timing = simulate(inst, without, free_run);
          if (!timing.feasible) continue;
          const int b = find_action(list, OpType::B, s, j);
          const double deadline = timing.timeline[d][b].start;
          const double reload_ms = level * *inst.stages[s].reload;
          const int got = latest_hidden_position(without, timing.timeline[d], d, s, j, reload_ms, deadline);
          int expected = lo;
          for (int pos = lo; pos <= hi; ++pos) {
            const double request = request_time(list, timing.timeline[d], pos);
            if (request + reload_ms <= deadline + kTimeEps) expected = pos;
          }
          EXPECT_EQ(got, expected) << what;
        }
      }
    }
  }
  EXPECT_GT(checked_positions, 500);
}

}  // namespace
}  // namespace optpipe
