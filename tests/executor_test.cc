// The executor (runtime/): schedules lowered to device programs and run for real with the
// reference MLP on the threads transport (one thread per device, the same core as under MPI).
#include "runtime/executor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <thread>

#include "model/error.h"
#include "model/instance_io.h"
#include "model/simulator.h"
#include "heuristics/registry.h"
#include "runtime/in_process_transport.h"
#include "runtime/mlp_reference.h"
#include "runtime/program.h"
#include "runtime/train.h"
#include "tests/test_paths.h"
#include "tests/test_util.h"

namespace optpipe {
namespace {

using runtime::DType;
using runtime::TrainOptions;
using runtime::TrainResult;

Schedule heuristic_schedule(const Instance& inst, const std::string& name) {
  const Heuristic* h = find_heuristic(name);
  if (!h) throw std::logic_error("no heuristic " + name);
  HeuristicResult r = run_heuristic(*h, inst);
  if (!r.ok()) throw std::logic_error(name + ": " + r.reason);
  return *r.schedule;
}

// 4 devices, 8 microbatches; with `tight`, memory for about 2.5 activations and offloadable
// stages, so that PipeOffload offloads.
Instance pipeline(bool tight) {
  Instance inst = test_support::uniform_instance(4, 8, 1.0, 1.0, 0.5, 0.05, test_support::GiB, test_support::GiB / 2,
                                            tight ? 2.6 * test_support::GiB : 1e18);
  if (tight) {
    for (auto& s : inst.stages) {
      s.offload = 0.4;
      s.reload = 0.4;
    }
  }
  inst.name = tight ? "pipeline-tight" : "pipeline";
  return inst;
}

Instance v_placement() { return load_instance(std::string(OPTPIPE_SOURCE_DIR) + "/instances/v-4x8.json"); }

TrainOptions options(DType dtype, int iterations = 1) {
  TrainOptions o;
  o.backend = "threads";
  o.executor.iterations = iterations;
  o.executor.timeout_s = 30;
  o.model.dtype = dtype;
  o.model.width = 16;
  o.model.rows = 4;
  o.model.layers_per_stage = 2;
  o.model.seed = 7;
  return o;
}

double rel_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double num = 0, den = 0;
  for (std::size_t k = 0; k < a.size(); ++k) {
    num = std::max(num, std::fabs(a[k] - b[k]));
    den = std::max(den, std::fabs(b[k]));
  }
  return den > 0 ? num / den : num;
}

// One iteration's gradients under a schedule equal the single-process reference.
void expect_reference_gradients(const Instance& inst, const Schedule& sch, DType dtype, double tol) {
  const TrainOptions o = options(dtype);
  const TrainResult got = runtime::train(inst, sch, o);
  auto stages = runtime::make_mlp_stages(runtime::model_config_for(inst, o.model));
  const runtime::ReferenceIteration ref = runtime::reference_iteration(stages, 0, inst.microbatches);
  ASSERT_EQ(got.final_gradients.size(), ref.gradients.size());
  for (std::size_t s = 0; s < ref.gradients.size(); ++s) {
    ASSERT_EQ(got.final_gradients[s].size(), ref.gradients[s].size()) << "stage " << s;
    EXPECT_LE(rel_diff(got.final_gradients[s], ref.gradients[s]), tol) << "stage " << s;
  }
  ASSERT_EQ(got.losses.size(), 1u);
  EXPECT_NEAR(got.losses[0], ref.loss, tol * std::fabs(ref.loss));
}

TEST(Executor, GradientsEqualTheReferenceUnderClassicSchedules) {
  const Instance inst = pipeline(false);
  for (const char* h : {"1f1b", "zb-h1", "zb-h2", "gpipe"}) {
    SCOPED_TRACE(h);
    const Schedule sch = heuristic_schedule(inst, h);
    expect_reference_gradients(inst, sch, DType::kFloat64, 1e-12);
    expect_reference_gradients(inst, sch, DType::kFloat32, 1e-5);
  }
}

TEST(Executor, GradientsEqualTheReferenceUnderAVPlacementSchedule) {
  const Instance inst = v_placement();
  const Schedule sch = heuristic_schedule(inst, "zb-v");
  expect_reference_gradients(inst, sch, DType::kFloat64, 1e-12);
  expect_reference_gradients(inst, sch, DType::kFloat32, 1e-5);
}

TEST(Executor, GradientsEqualTheReferenceWhenActivationsAreOffloaded) {
  const Instance inst = pipeline(true);
  const Schedule sch = heuristic_schedule(inst, "pipe-offload");
  ASSERT_TRUE(sch.has_offload());
  expect_reference_gradients(inst, sch, DType::kFloat64, 1e-12);
  expect_reference_gradients(inst, sch, DType::kFloat32, 1e-5);
  // The offloaded copies are poisoned on the "device": the match above needs every reload.
  const TrainResult r = runtime::train(inst, sch, options(DType::kFloat64));
  int offloads = 0, reloads = 0;
  for (const auto& d : r.devices) offloads += d.offloads, reloads += d.reloads;
  EXPECT_GT(offloads, 0);
  EXPECT_EQ(offloads, reloads);
}

// A reload that never happens would leave NaN in the kept activation: check that the poison is
// really there by running B without its reload, through a schedule edited after lowering.
TEST(Executor, ASkippedReloadShowsInTheGradients) {
  const Instance inst = pipeline(true);
  const Schedule sch = heuristic_schedule(inst, "pipe-offload");
  std::vector<runtime::DeviceProgram> progs = runtime::lower_schedule(inst, sch);
  // Drop device 0's first reload and its wait: B then reads the poisoned copy.
  auto& steps = progs[0].steps;
  int s = -1, j = -1;
  for (const auto& st : steps) {
    if (st.op == runtime::Instr::kIssueReload) {
      s = st.stage;
      j = st.mb;
      break;
    }
  }
  ASSERT_GE(s, 0);
  std::erase_if(steps, [&](const runtime::Step& st) {
    return (st.op == runtime::Instr::kIssueReload || st.op == runtime::Instr::kWaitReload) && st.stage == s && st.mb == j;
  });
  runtime::InProcessHub hub(inst.num_devices());
  const TrainOptions o = options(DType::kFloat64);
  const runtime::MlpConfig cfg = runtime::model_config_for(inst, o.model);
  std::vector<std::vector<double>> grads(static_cast<std::size_t>(inst.num_stages()));
  std::vector<std::thread> threads;
  std::vector<std::string> errors(static_cast<std::size_t>(inst.num_devices()));
  runtime::ExecutorOptions eo = o.executor;
  eo.timeout_s = 2;  // the skipped reload also stalls the allocation order: fail fast
  for (int d = 0; d < inst.num_devices(); ++d) {
    threads.emplace_back([&, d] {
      try {
        auto t = hub.transport(d);
        auto model = runtime::make_mlp_stage(cfg, d);
        std::vector<runtime::StageModel*> ptrs(static_cast<std::size_t>(inst.num_stages()), nullptr);
        ptrs[static_cast<std::size_t>(d)] = model.get();
        runtime::run_device(inst, progs[static_cast<std::size_t>(d)], ptrs, *t, eo);
        grads[static_cast<std::size_t>(d)] = model->gradients();
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(d)] = e.what();
      }
    });
  }
  for (auto& th : threads) th.join();
  // Either the memory accounting notices (the reload's bytes never come back) or the gradients
  // of stage 0 are NaN: the missing reload cannot go unnoticed.
  bool noticed = !errors[0].empty();
  for (double g : grads[0]) noticed = noticed || !std::isfinite(g);
  EXPECT_TRUE(noticed);
}

TEST(Executor, TrainingLowersTheLossWithTheSameLossesUnderEverySchedule) {
  const Instance inst = pipeline(true);
  std::vector<double> first;
  for (const char* h : {"1f1b", "pipe-offload", "zb-greedy"}) {
    SCOPED_TRACE(h);
    Schedule sch;
    try {
      sch = heuristic_schedule(inst, h);
    } catch (const std::logic_error& e) {
      continue;  // 1F1B does not fit this memory: that is expected
    }
    TrainOptions o = options(DType::kFloat64, 20);
    o.model.optimizer = runtime::MlpConfig::kAdam;
    o.model.learning_rate = 0.01;
    const TrainResult r = runtime::train(inst, sch, o);
    ASSERT_EQ(r.losses.size(), 20u);
    EXPECT_LT(r.losses.back(), 0.8 * r.losses.front());
    if (first.empty()) {
      first = r.losses;
    } else {
      EXPECT_EQ(r.losses, first);  // bit for bit: W accumulates in microbatch order in every schedule
    }
  }
  EXPECT_FALSE(first.empty());
}

TEST(Executor, PeakTrackedMemoryStaysUnderTheLimitAndMatchesTheSimulator) {
  for (const bool tight : {false, true}) {
    const Instance inst = pipeline(tight);
    for (const char* h : {"zb-h1", "pipe-offload", "zb-greedy"}) {
      Schedule sch;
      try {
        sch = heuristic_schedule(inst, h);
      } catch (const std::logic_error&) {
        continue;
      }
      SCOPED_TRACE(std::string(h) + (tight ? " tight" : ""));
      const TrainResult r = runtime::train(inst, sch, options(DType::kFloat64));
      for (int d = 0; d < inst.num_devices(); ++d) {
        const double peak = r.devices[static_cast<std::size_t>(d)].peak_bytes;
        EXPECT_LE(peak, inst.devices[static_cast<std::size_t>(d)].memory_limit + 1.0);
        // Real durations differ from the instance's, so offload completions can come in another
        // order relative to the compute ops than in the simulation: the peaks may differ, by
        // less than one activation.
        EXPECT_NEAR(peak, r.simulated_peak[static_cast<std::size_t>(d)], inst.stages[0].activation + 1.0);
      }
    }
  }
}

// Synthetic ops sleep for the instance's durations, scaled: the measured iteration time is within
// 10% of the simulator's makespan (the executor's overhead and its semantics). The *Timing suites
// run alone (tests/CMakeLists.txt: RUN_SERIAL), as other tests on the same cores delay wake-ups.
TEST(ExecutorTiming, SleepingOpsTakeTheSimulatedMakespan) {
  for (const bool tight : {false, true}) {
    const Instance inst = pipeline(tight);
    for (const char* h : {"1f1b", "pipe-offload"}) {
      Schedule sch;
      try {
        sch = heuristic_schedule(inst, h);
      } catch (const std::logic_error&) {
        continue;
      }
      TrainOptions o = options(DType::kFloat64, 3);
      o.synthetic = true;
      const double makespan = simulate(inst, sch).makespan;
      o.executor.time_scale = 250.0 / makespan;  // about 250 ms of wall time per iteration
      const TrainResult r = runtime::train(inst, sch, o);
      const double expected = makespan * o.executor.time_scale / 1000.0;
      double best = 1e9;
      for (double t : r.iteration_seconds) best = std::min(best, t);
      std::printf("[ executor ] %s%s: %.1f ms measured, %.1f ms simulated\n", h, tight ? " (tight)" : "", 1000 * best,
                  1000 * expected);
      EXPECT_NEAR(best, expected, 0.10 * expected) << h;
    }
  }
  // Two GPUs per PCIe switch: their transfers share the channels, in the simulated order.
  const Instance shared = load_instance(std::string(OPTPIPE_SOURCE_DIR) + "/instances/shared-pcie-4x8.json");
  for (const char* h : {"pipe-offload", "ada-offload"}) {
    const Schedule sch = heuristic_schedule(shared, h);
    ASSERT_TRUE(sch.has_offload()) << h;
    TrainOptions o = options(DType::kFloat64, 3);
    o.synthetic = true;
    const double makespan = simulate(shared, sch).makespan;
    o.executor.time_scale = 250.0 / makespan;
    const TrainResult r = runtime::train(shared, sch, o);
    const double expected = makespan * o.executor.time_scale / 1000.0;
    double best = 1e9;
    for (double t : r.iteration_seconds) best = std::min(best, t);
    std::printf("[ executor ] shared-pcie-4x8 %s: %.1f ms measured, %.1f ms simulated\n", h, 1000 * best,
                1000 * expected);
    EXPECT_NEAR(best, expected, 0.10 * expected) << h;
  }
}

// Random valid schedules of random instances (offload, shared PCIe, V and loop placements) all
// run to the end in the synthetic mode: lowering and the core do not deadlock.
TEST(Executor, RandomValidSchedulesRunWithoutDeadlock) {
  std::mt19937 rng(21);
  int ran = 0;
  for (int i = 0; i < 30; ++i) {
    test_support::RandomInstanceOptions ro;
    ro.tight_memory = i % 2 == 0;
    const Instance inst = test_support::random_instance(rng, ro);
    const BestResult best = run_all_heuristics(inst, false);
    for (const auto& res : best.results) {
      if (!res.ok()) continue;
      TrainOptions o = options(DType::kFloat64, 2);
      o.synthetic = true;
      o.executor.time_scale = 0.0;  // no sleeping: semantics only
      o.executor.timeout_s = 20;
      const TrainResult r = runtime::train(inst, *res.schedule, o);
      ASSERT_EQ(r.iteration_seconds.size(), 2u);
      for (const auto& d : r.devices) {
        EXPECT_LE(d.peak_bytes, inst.devices[static_cast<std::size_t>(d.device)].memory_limit + 1.0);
      }
      ++ran;
    }
  }
  std::printf("[ executor ] %d random schedules ran\n", ran);
  EXPECT_GT(ran, 40);
}

TEST(Executor, AScheduleForAnotherInstanceOrTruncatedIsAClearError) {
  const Instance inst = pipeline(false);
  Schedule sch = heuristic_schedule(inst, "1f1b");
  Schedule other = sch;
  other.instance = "something-else";
  try {
    runtime::train(inst, other, options(DType::kFloat64));
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("something-else"), std::string::npos) << e.what();
  }
  Schedule cut = sch;
  cut.devices[2].pop_back();
  try {
    runtime::train(inst, cut, options(DType::kFloat64));
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot run"), std::string::npos) << e.what();
  }
}

// A device that fails mid-iteration stops every other device at once (not after its timeout).
TEST(Executor, AFailingDeviceStopsTheOthersWithAClearError) {
  const Instance inst = pipeline(false);
  const Schedule sch = heuristic_schedule(inst, "1f1b");
  const auto progs = runtime::lower_schedule(inst, sch);
  runtime::InProcessHub hub(inst.num_devices());
  runtime::ExecutorOptions eo;
  eo.timeout_s = 20;
  std::vector<std::string> errors(4);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int d = 0; d < 4; ++d) {
    threads.emplace_back([&, d] {
      try {
        auto t = hub.transport(d);
        if (d == 2) {
          t->abort("device 2 ran out of something");  // what run_device does when it fails
          throw std::runtime_error("device 2 failed");
        }
        std::vector<runtime::StageModel*> none(4, nullptr);
        runtime::run_device(inst, progs[static_cast<std::size_t>(d)], none, *t, eo);
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(d)] = e.what();
      }
    });
  }
  for (auto& th : threads) th.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (int d = 0; d < 4; ++d) {
    EXPECT_FALSE(errors[static_cast<std::size_t>(d)].empty()) << "device " << d;
    if (d != 2) EXPECT_NE(errors[static_cast<std::size_t>(d)].find("rank 2 failed"), std::string::npos) << errors[d];
  }
  EXPECT_LT(seconds, 10.0);
}

TEST(Executor, LoweringPostsEveryReceiveAndMatchesSends) {
  const Instance inst = v_placement();
  const auto progs = runtime::lower_schedule(inst, heuristic_schedule(inst, "zb-v"));
  int sends = 0, receives = 0;
  for (const auto& p : progs) {
    sends += p.num_sends;
    receives += static_cast<int>(p.receives.size());
    std::string text = runtime::to_string(p);
    EXPECT_NE(text.find("F"), std::string::npos);
  }
  EXPECT_EQ(sends, receives);
  // V placement: stages 3 and 4 share device 3, so their activations are handed over in place.
  const int cross = 2 * (inst.num_stages() - 1) * inst.microbatches;
  EXPECT_EQ(sends, cross - 2 * inst.microbatches);
}

}  // namespace
}  // namespace optpipe
