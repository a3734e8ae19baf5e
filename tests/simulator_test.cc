// Spec §4 semantics, case by case, each small enough to draw. The expected timelines are
// written as text Gantt charts (viz/gantt_text.h: a column is `quantum` ms; an op is its type
// letter, its microbatch, then '-' to its end; '.' is idle; lanes dN> and dN< are the device's
// offloads and reloads). Every expectation was worked out by hand from the spec; the comments
// say how.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "model/instance_io.h"
#include "model/simulator.h"
#include "model/validator.h"
#include "tests/test_util.h"
#include "viz/gantt_text.h"

namespace optpipe {
namespace {

using test_support::GiB;
using test_support::lists;
using test_support::uniform_instance;

std::string gantt(const Instance& inst, const Schedule& sch, const SimResult& r, double quantum) {
  TextGanttOptions o;
  o.quantum = quantum;
  return render_text_gantt(inst, sch, r, o);
}

// One device, one stage, offloadable, static memory 0.
Instance single_device(int m, double limit, double offload, double reload, double weight_activation = 0) {
  Instance inst = uniform_instance(1, m, 1, 1, 1, 0, GiB, weight_activation, limit);
  inst.stages[0].offload = offload;
  inst.stages[0].reload = reload;
  return inst;
}

TEST(Simulator, OneFOneBTwoDevices) {
  // F=B=W=1, no comm. d1 runs F B W per microbatch from t=1; d0's B0.0 waits for B1.0 (ends 3).
  const Instance inst = uniform_instance(2, 2, 1, 1, 1);
  const Schedule sch = lists(inst, {{"F0.0", "F0.1", "B0.0", "W0.0", "B0.1", "W0.1"},
                                    {"F1.0", "B1.0", "W1.0", "F1.1", "B1.1", "W1.1"}});
  const SimResult r = simulate(inst, sch);
  ASSERT_TRUE(r.feasible) << r.reason;
  EXPECT_EQ(gantt(inst, sch, r, 0.5),
            "d0   |F0F1..B0W0..B1W1\n"
            "d1   |..F0B0W0F1B1W1..\n");
  EXPECT_DOUBLE_EQ(r.makespan, 8.0);
  EXPECT_NEAR(r.bubble, 1.0 - 12.0 / (2 * 8.0), 1e-12);
}

TEST(Simulator, CommOnlyBetweenDevices) {
  // V placement on 2 devices: stages 0,3 on d0 and 1,2 on d1; comm 0.5 applies to 0->1 and
  // 2->3 but not to 1->2 (same device). F0 [0,1], F1 [1.5,2.5], F2 [2.5,3.5], F3 [4,5],
  // B3 [5,6], W3 [6,7], B2 [6.5,7.5], B1 [7.5,8.5], W2, W1, B0 [9,10], W0 [10,11].
  Instance inst = uniform_instance(2, 1, 1, 1, 1, 0.5);
  inst.stages.push_back(inst.stages[1]);
  inst.stages.push_back(inst.stages[0]);
  inst.comm.assign(3, 0.5);
  ASSERT_EQ(inst.placement(), Placement::kV);
  const Schedule sch = lists(inst, {{"F0.0", "F3.0", "B3.0", "W3.0", "B0.0", "W0.0"},
                                    {"F1.0", "F2.0", "B2.0", "B1.0", "W2.0", "W1.0"}});
  const SimResult r = simulate(inst, sch);
  ASSERT_TRUE(r.feasible) << r.reason;
  EXPECT_EQ(gantt(inst, sch, r, 0.5),
            "d0   |F0......f0b0w0....B0W0\n"
            "d1   |...F0f0......b0B0w0W0.\n");
  EXPECT_DOUBLE_EQ(r.makespan, 11.0);
}

TEST(Simulator, ForwardWaitsForOffloadAndReloadWaitsForMemory) {
  // limit 1.5 GiB, activations 1 GiB, offload and reload 1 ms. F0.0@1 [0,1]; its offload [1,2];
  // F0.1@1 cannot fit at 1 (2 GiB) and waits for that offload: [2,3]. R0.0 and R0.1 are
  // requested at 3. The reload of 0.0 waits for memory until offload 0.1 ends at 4: [4,5]. The
  // reload of 0.1 waits for memory again, the compute stream goes on, and B0.0's end at 6 frees
  // room for it: [6,7]. B0.1 waits for that reload: [7,8].
  const Instance inst = single_device(2, 1.5 * GiB, 1, 1);
  const Schedule sch = lists(inst, {{"F0.0@1", "F0.1@1", "R0.0", "R0.1", "B0.0", "W0.0", "B0.1", "W0.1"}});
  const SimResult r = simulate(inst, sch);
  ASSERT_TRUE(r.feasible) << r.reason;
  EXPECT_EQ(gantt(inst, sch, r, 0.5),
            "d0   |F0..F1....B0W0B1W1\n"
            "d0>  |..>0..>1..........\n"
            "d0<  |........<0..<1....\n");
  EXPECT_DOUBLE_EQ(r.makespan, 9.0);
  EXPECT_NEAR(r.peak_memory[0], 1.0 * GiB, 1.0);
}

TEST(Simulator, ChannelIsFifoAcrossDevicesOfOnePcieGroup) {
  // Both devices share PCIe group 0. Offload 2 ms, reload 1 ms. The offload of 0.0 holds the
  // D2H channel [1,3]; d1's offload (requested at 2) waits for it: [3,5]. R0.0 (requested at 1)
  // waits for its offload, [3,4]; R1.0 waits behind it and for its own offload: [5,6].
  Instance inst = uniform_instance(2, 1, 1, 1, 1);
  for (auto& st : inst.stages) {
    st.offload = 2;
    st.reload = 1;
  }
  for (auto& d : inst.devices) d.pcie_group = 0;
  const Schedule sch = lists(inst, {{"F0.0@1", "R0.0", "B0.0", "W0.0"}, {"F1.0@1", "R1.0", "B1.0", "W1.0"}});
  const SimResult r = simulate(inst, sch);
  ASSERT_TRUE(r.feasible) << r.reason;
  EXPECT_EQ(gantt(inst, sch, r, 0.5),
            "d0   |F0............B0W0\n"
            "d0>  |..>0--............\n"
            "d0<  |......<0..........\n"
            "d1   |..F0........B0W0..\n"
            "d1>  |......>0--........\n"
            "d1<  |..........<0......\n");
  // With separate groups the second offload would not wait: [2,4], reload [4,5], B1.0 at 5.
  inst.devices[1].pcie_group = 1;
  const SimResult separate = simulate(inst, sch);
  ASSERT_TRUE(separate.feasible);
  EXPECT_DOUBLE_EQ(separate.makespan, 8.0);
  EXPECT_DOUBLE_EQ(r.makespan, 9.0);
}

TEST(Simulator, EqualRequestTimesServeLowerDeviceFirst) {
  // At t=2 both devices request an offload and a reload on the shared channels. Device 0 goes
  // first on both: offload 0.1 [2,3], offload 1.0 [3,4]; reload 0.1 [3,4], reload 1.0 [4,5].
  Instance inst = uniform_instance(2, 2, 1, 1, 1);
  for (auto& st : inst.stages) {
    st.offload = 1;
    st.reload = 1;
  }
  for (auto& d : inst.devices) d.pcie_group = 7;
  const Schedule sch = lists(inst, {{"F0.0", "F0.1@1", "R0.1", "B0.0", "W0.0", "B0.1", "W0.1"},
                                    {"F1.0@1", "R1.0", "B1.0", "W1.0", "F1.1", "B1.1", "W1.1"}});
  const SimResult r = simulate(inst, sch);
  ASSERT_TRUE(r.feasible) << r.reason;
  EXPECT_EQ(gantt(inst, sch, r, 0.5),
            "d0   |F0F1........B0W0..B1W1\n"
            "d0>  |....>1................\n"
            "d0<  |......<1..............\n"
            "d1   |..F0......B0W0F1B1W1..\n"
            "d1>  |......>0..............\n"
            "d1<  |........<0............\n");
  EXPECT_DOUBLE_EQ(r.makespan, 11.0);
}

TEST(Simulator, RemovalsComeBeforeAdditionsAtEqualTimes) {
  // limit 2 GiB: F0.0@1 [0,1] and F0.1@1 [1,2] fill memory. At t=2 the offload of 0.0 ends
  // exactly when F0.2 wants to start: the removal counts first, so F0.2 starts at 2 (not 3).
  // At t=3 likewise the offload of 0.1 ends as the reload of 0.0 (requested at 3) starts.
  const Instance inst = single_device(3, 2 * GiB, 1, 1);
  const Schedule sch = lists(
      inst, {{"F0.0@1", "F0.1@1", "F0.2", "R0.0", "B0.0", "W0.0", "R0.1", "B0.1", "W0.1", "B0.2", "W0.2"}});
  const SimResult r = simulate(inst, sch);
  ASSERT_TRUE(r.feasible) << r.reason;
  EXPECT_EQ(gantt(inst, sch, r, 0.5),
            "d0   |F0F1F2..B0W0..B1W1B2W2\n"
            "d0>  |..>0>1................\n"
            "d0<  |......<0....<1........\n");
  EXPECT_DOUBLE_EQ(r.timeline[0][2].start, 2.0);
  EXPECT_NEAR(r.peak_memory[0], 2 * GiB, 1.0);
}

TEST(Simulator, ForwardBeforeReloadWhenBothWantTheSameMemory) {
  // limit 2 GiB. At t=2 the offload of 0.0 ends (1 GiB resident after it). F0.2 and the reload
  // of 0.0 (requested at 2) both want 1 GiB, only one fits: F first, [2,3]. The reload starts
  // when the offload of 0.1 ends at 3: [3,4]; then B0.0 [4,5], W0.0, R0.1 [6,7], B0.1 [7,8].
  const Instance inst = single_device(3, 2 * GiB, 1, 1);
  const Schedule sch = lists(
      inst, {{"F0.0@1", "F0.1@1", "R0.0", "F0.2", "B0.0", "W0.0", "R0.1", "B0.1", "W0.1", "B0.2", "W0.2"}});
  const SimResult r = simulate(inst, sch);
  ASSERT_TRUE(r.feasible) << r.reason;
  EXPECT_EQ(gantt(inst, sch, r, 0.5),
            "d0   |F0F1F2..B0W0..B1W1B2W2\n"
            "d0>  |..>0>1................\n"
            "d0<  |......<0....<1........\n");
  EXPECT_NEAR(r.peak_memory[0], 2 * GiB, 1.0);
}

TEST(Simulator, UnsplitBackwardLastsBackwardPlusWeightAndFreesAll) {
  // B = 1.2 + 0.8 = 2 ms. d1: F [1,2], B [2,4], F [4,5], B [5,7]; d0's Bs follow: [4,6], [7,9].
  Instance inst = uniform_instance(2, 2, 1, 1.2, 0.8, 0, GiB, 0);
  inst.split_backward = false;
  const Schedule sch = lists(inst, {{"F0.0", "F0.1", "B0.0", "B0.1"}, {"F1.0", "B1.0", "F1.1", "B1.1"}});
  const SimResult r = simulate(inst, sch);
  ASSERT_TRUE(r.feasible) << r.reason;
  EXPECT_EQ(gantt(inst, sch, r, 0.5),
            "d0   |F0F1....B0--..B1--\n"
            "d1   |..F0B0--F1B1--....\n");
  EXPECT_NEAR(r.peak_memory[0], 2 * GiB, 1.0);
  EXPECT_NEAR(r.memory[0].back().bytes, 0.0, 1.0);  // B frees the whole activation
  EXPECT_DOUBLE_EQ(r.makespan, 9.0);
}

TEST(Simulator, WeightActivationIsHeldUntilW) {
  const Instance inst = uniform_instance(1, 1, 1, 1, 1, 0, GiB, 0.25 * GiB);
  const Schedule sch = lists(inst, {{"F0.0", "B0.0", "W0.0"}});
  const SimResult r = simulate(inst, sch);
  ASSERT_TRUE(r.feasible);
  // One point per instant, holding the value after everything at that instant:
  // 1 GiB from 0 (F's start), 0.25 GiB from 2 (B's end), 0 from 3 (W's end).
  ASSERT_EQ(r.memory[0].size(), 3u);
  EXPECT_DOUBLE_EQ(r.memory[0][0].time, 0.0);
  EXPECT_NEAR(r.memory[0][0].bytes, GiB, 1);
  EXPECT_DOUBLE_EQ(r.memory[0][1].time, 2.0);
  EXPECT_NEAR(r.memory[0][1].bytes, 0.25 * GiB, 1);
  EXPECT_DOUBLE_EQ(r.memory[0][2].time, 3.0);
  EXPECT_NEAR(r.memory[0][2].bytes, 0, 1);
}

TEST(Simulator, MemoryDeadlockIsReported) {
  // Two activations never fit in 1.5 GiB without offload: F0.1 waits forever.
  const Instance inst = uniform_instance(1, 2, 1, 1, 1, 0, GiB, 0, 1.5 * GiB);
  const Schedule sch = lists(inst, {{"F0.0", "F0.1", "B0.0", "W0.0", "B0.1", "W0.1"}});
  const SimResult r = simulate(inst, sch);
  EXPECT_FALSE(r.feasible);
  EXPECT_NE(r.reason.find("device 0 waits at F0.1"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("for memory"), std::string::npos) << r.reason;
  const Validation v = validate(inst, sch);
  ASSERT_EQ(v.violations.size(), 1u);
  EXPECT_EQ(v.violations[0].rule, Rule::kDeadlock);
}

TEST(Simulator, CycleBetweenListsIsReported) {
  // d0 wants B0.0 (needs B1.0) before F0.1; d1 wants F1.1 (needs F0.1) before B1.0.
  const Instance inst = uniform_instance(2, 2, 1, 1, 1);
  const Schedule sch = lists(inst, {{"F0.0", "B0.0", "F0.1", "W0.0", "B0.1", "W0.1"},
                                    {"F1.0", "F1.1", "B1.0", "W1.0", "B1.1", "W1.1"}});
  const SimResult r = simulate(inst, sch);
  EXPECT_FALSE(r.feasible);
  EXPECT_NE(r.reason.find("device 0 waits at B0.0 (position 1) for B1.0"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("device 1 waits at F1.1 (position 1) for F0.1"), std::string::npos) << r.reason;
}

TEST(Simulator, OwnListOrderDeadlockNamesIt) {
  const Instance inst = uniform_instance(1, 1, 1, 1, 1);
  const Schedule sch = lists(inst, {{"B0.0", "F0.0", "W0.0"}});
  const SimResult r = simulate(inst, sch);
  EXPECT_FALSE(r.feasible);
  EXPECT_NE(r.reason.find("later in its own list"), std::string::npos) << r.reason;
}

TEST(Simulator, IgnoringTheLimitMeasuresWhatAScheduleWouldNeed) {
  const Instance inst = uniform_instance(1, 3, 1, 1, 1, 0, GiB, 0, 1.5 * GiB);
  const Schedule sch = lists(inst, {{"F0.0", "F0.1", "F0.2", "B0.0", "W0.0", "B0.1", "W0.1", "B0.2", "W0.2"}});
  SimOptions o;
  o.enforce_memory_limit = false;
  const SimResult r = simulate(inst, sch, o);
  ASSERT_TRUE(r.feasible);
  EXPECT_NEAR(r.peak_memory[0], 3 * GiB, 1);
  EXPECT_FALSE(simulate(inst, sch).feasible);
}

TEST(Simulator, ZeroDurationsSettleAtOneInstant) {
  Instance inst = uniform_instance(2, 2, 0, 0, 0);
  const Schedule sch = lists(inst, {{"F0.0", "F0.1", "B0.0", "W0.0", "B0.1", "W0.1"},
                                    {"F1.0", "B1.0", "W1.0", "F1.1", "B1.1", "W1.1"}});
  const SimResult r = simulate(inst, sch);
  ASSERT_TRUE(r.feasible) << r.reason;
  EXPECT_DOUBLE_EQ(r.makespan, 0.0);
  EXPECT_DOUBLE_EQ(r.bubble, 0.0);
}

TEST(Simulator, RepeatedRunsOnOneSimulatorAgree) {
  std::mt19937 rng(7);
  test_support::RandomInstanceOptions o;
  o.tight_memory = true;
  for (int i = 0; i < 20; ++i) {
    const Instance inst = test_support::random_instance(rng, o);
    Simulator sim(inst);
    const Schedule a = test_support::random_valid_schedule(inst, rng);
    const Schedule b = test_support::random_valid_schedule(inst, rng);
    const SimResult ra1 = sim.run(a);
    const SimResult rb = sim.run(b);
    const SimResult ra2 = sim.run(a);
    EXPECT_EQ(ra1.feasible, ra2.feasible);
    EXPECT_EQ(ra1.makespan, ra2.makespan);
    EXPECT_EQ(ra1.peak_memory, ra2.peak_memory);
    EXPECT_EQ(rb.feasible, simulate(inst, b).feasible);
  }
}

// An F listed where its device can never have room for it is a dead end as soon as it is
// listed: until it starts the device runs nothing else, whether its inputs are done or not, so
// only the device's pending offloads could make room. Device 1 has room for one activation and
// lists F1.1 right after F1.0 (its B comes later in the list): at device 2's decision (t = 3.5)
// F1.1's input F0.1 is still running (until t = 4), and the wait is already known to never end.
TEST(Simulator, AForwardWithNoRoomEverIsDeadBeforeItsInputsArrive) {
  auto instance = [](double limit1, bool offload) {
    std::string stages;
    for (int s = 0; s < 3; ++s) {
      const double f = s == 0 ? 2.0 : s == 1 ? 1.0 : 0.5;
      stages += (s ? "," : "") + std::string(R"({"device": )") + std::to_string(s) + R"(, "forward": )" +
                std::to_string(f) + R"(, "backward": 1, "weight": 1, "activation": 10)" +
                (offload && s == 1 ? R"(, "offload": 0.5, "reload": 0.5)" : "") + "}";
    }
    return parse_instance(R"({"format": "optpipe-instance/1", "microbatches": 2,
        "devices": [{"memory_limit": 100}, {"memory_limit": )" + std::to_string(limit1) + R"(}, {"memory_limit": 100}],
        "stages": [)" + stages + "]}");
  };
  // The first actions of each device, one per decision, and what the check says at device 2's
  // decision after device 1 listed its second forward.
  auto check_after_second_forward = [](const Instance& inst, double level) {
    Simulator sim(inst);
    sim.start_open();
    const std::vector<std::vector<Action>> plan = {
        {make_f(0, 0), make_f(0, 1)}, {make_f(1, 0, level), make_f(1, 1)}, {make_f(2, 0), make_f(2, 1)}};
    std::vector<std::size_t> next(3, 0);
    Simulator::Step step = sim.advance();
    bool listed = false;
    while (step.kind == Simulator::Step::Kind::kDecision) {
      if (listed && step.device == 2) {
        EXPECT_DOUBLE_EQ(step.time, 3.5);
        EXPECT_TRUE(std::isnan(sim.snapshot().end[sim.op_id(OpType::F, 0, 1)])) << "F0.1, F1.1's input, is running";
        return sim.forward_wait_never_ends();
      }
      if (next[step.device] >= plan[step.device].size()) break;
      sim.append(step.device, plan[step.device][next[step.device]++]);
      listed = listed || (step.device == 1 && next[1] == 2);
      step = sim.advance();
    }
    ADD_FAILURE() << "device 2 had no decision after F1.1 was listed";
    return false;
  };
  EXPECT_TRUE(check_after_second_forward(instance(10, false), 0.0));   // room for one: F1.0 holds it
  EXPECT_FALSE(check_after_second_forward(instance(20, false), 0.0));  // room for two
  // F1.0 offloaded: its offload's end will make room (the offload is requested at t = 3).
  EXPECT_FALSE(check_after_second_forward(instance(10, true), 1.0));
}

}  // namespace
}  // namespace optpipe
