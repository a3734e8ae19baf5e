// Online re-scheduling (online/online.h): training starts with one schedule, the background
// solver finds a better one on the profiled instance, and every device switches at the same
// iteration without changing the losses.
#include "online/online.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <stdexcept>

#include "model/simulator.h"
#include "heuristics/registry.h"
#include "runtime/train.h"
#include "tests/test_util.h"

namespace optpipe {
namespace {

Schedule schedule_of(const Instance& inst, const std::string& name) {
  HeuristicResult r = run_heuristic(*find_heuristic(name), inst);
  if (!r.ok()) throw std::logic_error(name + ": " + r.reason);
  return *r.schedule;
}

runtime::TrainOptions training(int iterations) {
  runtime::TrainOptions o;
  o.executor.iterations = iterations;
  o.executor.timeout_s = 30;
  o.model.width = 16;
  o.model.rows = 4;
  o.model.optimizer = runtime::MlpConfig::kAdam;
  return o;
}

Instance pipeline() {
  Instance inst = test_support::uniform_instance(4, 8, 1.0, 1.0, 0.5, 0.05);
  inst.name = "online-4x8";
  return inst;
}

// GPipe leaves a large bubble; the solver's schedule on the profiled instance is faster.
TEST(Online, SwitchingSchedulesKeepsTheLossesAndEveryDeviceSwitchesTogether) {
  const Instance inst = pipeline();
  const Schedule gpipe = schedule_of(inst, "gpipe");
  const runtime::TrainResult still = runtime::train(inst, gpipe, training(8));
  runtime::TrainOptions o = training(8);
  runtime::OnlineOptions on;
  on.profile_iterations = 2;
  on.switch_threshold = 0.0;
  on.solver_seconds = 3;
  on.wait_for_solver = true;
  o.online = runtime::online_rescheduling(on);
  const runtime::TrainResult moved = runtime::train(inst, gpipe, o);
  for (const auto& line : moved.online_log) std::printf("[ online   ] %s\n", line.c_str());
  ASSERT_EQ(moved.switches.size(), 1u);
  const runtime::SwitchEvent& sw = moved.switches.front();
  EXPECT_EQ(sw.iteration, 2);
  EXPECT_LT(sw.predicted_after, sw.predicted_before);
  for (const auto& d : moved.devices) {
    ASSERT_EQ(d.switch_iterations.size(), 1u) << "device " << d.device;
    EXPECT_EQ(d.switch_iterations.front(), sw.iteration) << "device " << d.device;
  }
  EXPECT_EQ(moved.losses, still.losses);  // bit for bit
  EXPECT_EQ(moved.final_parameters, still.final_parameters);
}

TEST(Online, ASolverThatFindsNothingBetterLeavesTrainingUntouched) {
  const Instance inst = pipeline();
  const Schedule zb = schedule_of(inst, "zb-h2");
  const runtime::TrainResult still = runtime::train(inst, zb, training(6));
  runtime::TrainOptions o = training(6);
  runtime::OnlineOptions on;
  on.profile_iterations = 1;
  on.switch_threshold = 10.0;  // nothing is 1000% faster
  on.solver_seconds = 2;
  on.wait_for_solver = true;
  o.online = runtime::online_rescheduling(on);
  const runtime::TrainResult r = runtime::train(inst, zb, o);
  EXPECT_TRUE(r.switches.empty());
  for (const auto& d : r.devices) EXPECT_TRUE(d.switch_iterations.empty());
  EXPECT_EQ(r.losses, still.losses);
  bool explained = false;
  for (const auto& line : r.online_log) explained = explained || line.find("kept the running schedule") != std::string::npos;
  EXPECT_TRUE(explained);
}

// The solver's time limit is far beyond the training: training ends on its own time and stops
// the solver; it never waits for it.
TEST(Online, ALongSolverNeverStallsTraining) {
  Instance inst = test_support::uniform_instance(4, 16, 1.0, 1.0, 0.5, 0.05);
  inst.name = "online-4x16";
  const Schedule gpipe = schedule_of(inst, "gpipe");
  runtime::TrainOptions o = training(4);
  runtime::OnlineOptions on;
  on.profile_iterations = 1;
  on.solver_seconds = 120;
  o.online = runtime::online_rescheduling(on);
  const auto t0 = std::chrono::steady_clock::now();
  const runtime::TrainResult r = runtime::train(inst, gpipe, o);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.losses.size(), 4u);
  EXPECT_LT(seconds, 30.0);
}

}  // namespace
}  // namespace optpipe
