// Random differential and property tests of the simulator.
//
// 1. Without offload the spec's timing reduces to something much simpler: an F can only wait
//    for memory that a later op would free, so either every F fits when it is reached in list
//    order (memory is then a prefix sum over the list) or the schedule deadlocks; and the
//    times are a longest path through the list order and the dependencies. The reference below
//    computes exactly that, naively, and must agree with the simulator on every random case.
// 2. With offload, a certificate check: the simulated timeline must satisfy every constraint
//    of spec §4 (precedences, one op at a time, channel FIFO, memory within limits) and start
//    every op as early as the spec allows.
// Each sweep runs as ranges of its cases (tests/case_range.h): the test's name says which.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>

#include "model/simulator.h"
#include "model/validator.h"
#include "tests/case_range.h"
#include "tests/test_util.h"

namespace optpipe {
namespace {

using test_support::case_range_name;
using test_support::case_ranges;
using test_support::CaseRange;

struct Reference {
  bool feasible = false;
  double makespan = 0;
  std::vector<double> peak;
  std::vector<std::vector<double>> start;  // [device][list index]
};

// Naive reference for schedules without offload (see the file comment).
Reference reference_without_offload(const Instance& inst, const Schedule& sch) {
  Reference ref;
  const int D = inst.num_devices(), S = inst.num_stages();
  // Memory: prefix sums in list order.
  ref.peak.assign(D, 0.0);
  bool fits = true;
  for (int d = 0; d < D; ++d) {
    double mem = inst.devices[d].static_memory;
    ref.peak[d] = mem;
    for (const Action& a : sch.devices[d]) {
      if (a.type == OpType::F) {
        if (mem + inst.stages[a.stage].activation > inst.devices[d].memory_limit + kMemoryTolerance) fits = false;
        mem += inst.stages[a.stage].activation;
        ref.peak[d] = std::max(ref.peak[d], mem);
      } else if (a.type == OpType::B) {
        mem -= inst.freed_by_b(a.stage);
      } else if (a.type == OpType::W) {
        mem -= inst.freed_by_w(a.stage);
      }
      if (!fits) break;
    }
  }
  // Times: repeatedly sweep the devices, starting any op whose inputs have ended.
  std::map<std::tuple<int, int, int>, double> end;  // (type, s, j) -> end
  auto get = [&](OpType t, int s, int j) -> std::optional<double> {
    auto it = end.find({static_cast<int>(t), s, j});
    if (it == end.end()) return std::nullopt;
    return it->second;
  };
  std::vector<std::size_t> pc(D, 0);
  std::vector<double> now(D, 0.0);
  ref.start.resize(D);
  for (int d = 0; d < D; ++d) ref.start[d].assign(sch.devices[d].size(), -1);
  bool progress = true;
  while (progress) {
    progress = false;
    for (int d = 0; d < D; ++d) {
      while (pc[d] < sch.devices[d].size()) {
        const Action& a = sch.devices[d][pc[d]];
        double ready = 0;
        bool ok = true;
        auto need = [&](std::optional<double> e, double extra) {
          if (!e) ok = false;
          else ready = std::max(ready, *e + extra);
        };
        if (a.type == OpType::F && a.stage > 0) need(get(OpType::F, a.stage - 1, a.mb), inst.comm_after(a.stage - 1));
        if (a.type == OpType::B) {
          need(get(OpType::F, a.stage, a.mb), 0);
          if (a.stage + 1 < S) need(get(OpType::B, a.stage + 1, a.mb), inst.comm_after(a.stage));
        }
        if (a.type == OpType::W) need(get(OpType::B, a.stage, a.mb), 0);
        if (!ok) break;
        const double st = std::max(now[d], ready);
        ref.start[d][pc[d]] = st;
        now[d] = st + inst.duration(a.type, a.stage);
        end[{static_cast<int>(a.type), a.stage, a.mb}] = now[d];
        ref.makespan = std::max(ref.makespan, now[d]);
        ++pc[d];
        progress = true;
      }
    }
  }
  bool complete = true;
  for (int d = 0; d < D; ++d) complete = complete && pc[d] == sch.devices[d].size();
  ref.feasible = fits && complete;
  return ref;
}

using SimulatorDifferential = test_support::CaseRangeTest;

TEST_P(SimulatorDifferential, MatchesNaiveReferenceWithoutOffload) {
  const CaseRange range = GetParam();
  std::mt19937 rng(20261121);
  int feasible = 0, infeasible = 0;
  for (int i = 0; i < range.end; ++i) {
    test_support::RandomInstanceOptions o;
    o.tight_memory = (i % 2) == 1;
    o.max_devices = 5;
    o.max_microbatches = 7;
    const Instance inst = test_support::random_instance(rng, o);
    const Schedule sch = test_support::random_valid_schedule(inst, rng, 0.0);
    if (!range.contains(i)) continue;  // drawn only to keep the engine in step
    SCOPED_TRACE("case " + std::to_string(i));
    ASSERT_TRUE(check_structure(inst, sch).empty());
    const SimResult got = simulate(inst, sch);
    const Reference want = reference_without_offload(inst, sch);
    ASSERT_EQ(got.feasible, want.feasible) << "case " << i << ": " << got.reason;
    if (!want.feasible) {
      ++infeasible;
      continue;
    }
    ++feasible;
    EXPECT_NEAR(got.makespan, want.makespan, 1e-9) << "case " << i;
    for (int d = 0; d < inst.num_devices(); ++d) {
      EXPECT_NEAR(got.peak_memory[d], want.peak[d], 1.0) << "case " << i << " device " << d;
      for (std::size_t k = 0; k < sch.devices[d].size(); ++k) {
        EXPECT_NEAR(got.timeline[d][k].start, want.start[d][k], 1e-9) << "case " << i << " d" << d << " k" << k;
      }
    }
  }
  EXPECT_GT(feasible, range.share(100));
  EXPECT_GT(infeasible, range.share(20));
}
INSTANTIATE_TEST_SUITE_P(Seed20261121, SimulatorDifferential, testing::ValuesIn(case_ranges(600, 4)),
                         case_range_name);

// Memory of device d just after time t (value of the step curve), from the recorded curve.
double memory_at(const SimResult& r, int d, double t) {
  double v = r.memory[d].front().bytes;
  for (const MemoryPoint& p : r.memory[d]) {
    if (p.time <= t + kTimeEps) v = p.bytes;
  }
  return v;
}

using SimulatorTimeline = test_support::CaseRangeTest;

TEST_P(SimulatorTimeline, SatisfiesEverySpecConstraintWithOffload) {
  const CaseRange range = GetParam();
  std::mt19937 rng(42);
  int checked = 0, with_transfers = 0;
  for (int i = 0; i < range.end; ++i) {
    test_support::RandomInstanceOptions o;
    o.tight_memory = (i % 3) != 0;
    o.offloadable_probability = 0.8;
    const Instance inst = test_support::random_instance(rng, o);
    const Schedule sch = test_support::random_valid_schedule(inst, rng, 0.6);
    if (!range.contains(i)) continue;  // drawn only to keep the engine in step
    SCOPED_TRACE("case " + std::to_string(i));
    const SimResult r = simulate(inst, sch);
    if (!r.feasible) continue;
    ++checked;
    if (!r.transfers.empty()) ++with_transfers;
    const int D = inst.num_devices(), S = inst.num_stages(), m = inst.microbatches;
    // Where each compute op ran.
    std::map<std::tuple<int, int, int>, ActionTiming> op;
    for (int d = 0; d < D; ++d) {
      double prev_end = 0;
      for (std::size_t k = 0; k < sch.devices[d].size(); ++k) {
        const Action& a = sch.devices[d][k];
        const ActionTiming& t = r.timeline[d][k];
        ASSERT_TRUE(t.done());
        if (!a.is_compute()) {
          EXPECT_NEAR(t.start, prev_end, 1e-9) << "an R is requested at the end of the compute before it";
          continue;
        }
        EXPECT_GE(t.start, prev_end - 1e-9) << "one compute op at a time, in list order";
        EXPECT_NEAR(t.end - t.start, inst.duration(a.type, a.stage), 1e-9);
        prev_end = t.end;
        op[{static_cast<int>(a.type), a.stage, a.mb}] = t;
        EXPECT_LE(t.end, r.makespan + 1e-9);
      }
    }
    std::map<std::pair<int, int>, const Transfer*> offload, reload;
    for (const Transfer& t : r.transfers) {
      ASSERT_TRUE(t.finished);
      (t.kind == Transfer::Kind::kOffload ? offload : reload)[{t.stage, t.mb}] = &t;
    }
    for (int s = 0; s < S; ++s) {
      for (int j = 0; j < m; ++j) {
        const auto f = op.at({0, s, j});
        const auto b = op.at({1, s, j});
        if (s > 0) EXPECT_GE(f.start, op.at({0, s - 1, j}).end + inst.comm_after(s - 1) - 1e-9);
        EXPECT_GE(b.start, f.end - 1e-9);
        if (s + 1 < S) EXPECT_GE(b.start, op.at({1, s + 1, j}).end + inst.comm_after(s) - 1e-9);
        if (inst.split_backward) EXPECT_GE(op.at({2, s, j}).start, b.end - 1e-9);
        if (offload.count({s, j})) {
          const Transfer& off = *offload.at({s, j});
          const Transfer& rel = *reload.at({s, j});
          EXPECT_NEAR(off.request, f.end, 1e-9);
          EXPECT_GE(off.start, off.request - 1e-9);
          EXPECT_NEAR(off.end - off.start, off.r * *inst.stages[s].offload, 1e-9);
          EXPECT_GE(rel.start, off.end - 1e-9) << "a reload starts after its offload ends";
          EXPECT_GE(rel.start, rel.request - 1e-9);
          EXPECT_NEAR(rel.end - rel.start, rel.r * *inst.stages[s].reload, 1e-9);
          EXPECT_GE(b.start, rel.end - 1e-9) << "B waits for its reload";
        }
      }
    }
    // Channels: one transfer at a time, in request order (ties: device, list position).
    for (int g = 0; g < r.num_groups; ++g) {
      for (auto kind : {Transfer::Kind::kOffload, Transfer::Kind::kReload}) {
        std::vector<const Transfer*> q;
        for (const Transfer& t : r.transfers) {
          if (t.group == g && t.kind == kind) q.push_back(&t);
        }
        std::stable_sort(q.begin(), q.end(), [](const Transfer* a, const Transfer* b) {
          if (std::fabs(a->request - b->request) > kTimeEps) return a->request < b->request;
          if (a->device != b->device) return a->device < b->device;
          return a->list_index < b->list_index;
        });
        for (std::size_t k = 1; k < q.size(); ++k) {
          EXPECT_GE(q[k]->start, q[k - 1]->end - 1e-9) << "channel FIFO, case " << i;
        }
      }
    }
    // Memory stays within the limit, and the peak matches the curve's maximum.
    for (int d = 0; d < D; ++d) {
      double curve_max = 0;
      for (const MemoryPoint& p : r.memory[d]) {
        EXPECT_LE(p.bytes, inst.devices[d].memory_limit + kMemoryTolerance);
        curve_max = std::max(curve_max, p.bytes);
      }
      EXPECT_LE(r.peak_memory[d], inst.devices[d].memory_limit + kMemoryTolerance);
      EXPECT_GE(r.peak_memory[d], curve_max - 1.0);
      EXPECT_NEAR(r.memory[d].back().bytes, inst.devices[d].static_memory, 1.0) << "everything is freed at the end";
    }
    // As early as allowed: an F that starts later than its device and inputs allow must have
    // been short of memory at that moment.
    for (int d = 0; d < D; ++d) {
      double prev_end = 0;
      for (std::size_t k = 0; k < sch.devices[d].size(); ++k) {
        const Action& a = sch.devices[d][k];
        if (!a.is_compute()) continue;
        const ActionTiming& t = r.timeline[d][k];
        double ready = prev_end;
        if (a.type == OpType::F && a.stage > 0) ready = std::max(ready, op.at({0, a.stage - 1, a.mb}).end + inst.comm_after(a.stage - 1));
        if (a.type == OpType::B) {
          ready = std::max(ready, op.at({0, a.stage, a.mb}).end);
          if (a.stage + 1 < S) ready = std::max(ready, op.at({1, a.stage + 1, a.mb}).end + inst.comm_after(a.stage));
          if (reload.count({a.stage, a.mb})) ready = std::max(ready, reload.at({a.stage, a.mb})->end);
        }
        if (a.type == OpType::W) ready = std::max(ready, op.at({1, a.stage, a.mb}).end);
        if (a.type != OpType::F) {
          EXPECT_NEAR(t.start, ready, 1e-9) << "B and W never wait for memory";
        } else if (t.start > ready + 1e-9) {
          EXPECT_GT(memory_at(r, d, ready) + inst.stages[a.stage].activation,
                    inst.devices[d].memory_limit + kMemoryTolerance)
              << "F" << a.stage << "." << a.mb << " waited without a memory shortage, case " << i;
        } else {
          EXPECT_NEAR(t.start, ready, 1e-9);
        }
        prev_end = t.end;
      }
    }
  }
  EXPECT_GT(checked, range.share(100));
  EXPECT_GT(with_transfers, range.share(50));
}
INSTANTIATE_TEST_SUITE_P(Seed42, SimulatorTimeline, testing::ValuesIn(case_ranges(500, 4)), case_range_name);

// The incremental form (start_open / advance / append) fed one action per decision from a
// complete schedule must reproduce run() on that schedule exactly; decisions come in time order.
using SimulatorOpenLists = test_support::CaseRangeTest;

TEST_P(SimulatorOpenLists, ReproduceTheClosedRun) {
  const CaseRange range = GetParam();
  std::mt19937 rng(11);
  int decisions = 0, deadlocks = 0;
  for (int i = 0; i < range.end; ++i) {
    test_support::RandomInstanceOptions o;
    o.tight_memory = (i % 2) == 0;
    o.offloadable_probability = 0.7;
    const Instance inst = test_support::random_instance(rng, o);
    const Schedule sch = test_support::random_valid_schedule(inst, rng, 0.5);
    if (!range.contains(i)) continue;  // drawn only to keep the engine in step
    SCOPED_TRACE("case " + std::to_string(i));
    Simulator closed(inst);
    const SimOptions quiet = SimOptions::quiet();
    const SimResult want = closed.run(sch, quiet);

    Simulator open(inst);
    open.start_open();
    std::vector<std::size_t> next(inst.num_devices(), 0);
    double last_time = 0;
    Simulator::Step step = open.advance();
    while (step.kind == Simulator::Step::Kind::kDecision) {
      ASSERT_GE(step.time, last_time - 1e-12) << "decisions come in time order, case " << i;
      last_time = step.time;
      const auto& list = sch.devices[step.device];
      ASSERT_LT(next[step.device], list.size()) << "a decision for a device whose list is complete";
      open.append(step.device, list[next[step.device]++]);
      ++decisions;
      // A snapshot resumed on another simulator object continues identically.
      if (i % 7 == 0) {
        Simulator copy(inst);
        copy.restore(open.snapshot());
        open.restore(copy.snapshot());
      }
      step = open.advance();
    }
    ASSERT_EQ(step.kind == Simulator::Step::Kind::kDone, want.feasible) << "case " << i;
    if (!want.feasible) {
      ++deadlocks;
      continue;
    }
    EXPECT_EQ(open.snapshot().makespan, want.makespan) << "case " << i;
    EXPECT_EQ(open.snapshot().peak, want.peak_memory) << "case " << i;
    for (int d = 0; d < inst.num_devices(); ++d) EXPECT_EQ(next[d], sch.devices[d].size());
  }
  EXPECT_GT(decisions, range.share(1000));
  EXPECT_GT(deadlocks, range.share(10));
}
INSTANTIATE_TEST_SUITE_P(Seed11, SimulatorOpenLists, testing::ValuesIn(case_ranges(300, 3)), case_range_name);

// Simulator::forward_wait_never_ends is a proof that no continuation of the lists completes: so
// whenever it holds at a decision along a schedule's lists, that schedule deadlocks. It says so
// on some of them before the blocked forward's inputs have arrived.
using SimulatorNeverEnds = test_support::CaseRangeTest;

TEST_P(SimulatorNeverEnds, OnlyWhereTheListsDeadlock) {
  const CaseRange range = GetParam();
  std::mt19937 rng(29);
  int fired = 0, early = 0, deadlocks = 0;
  for (int i = 0; i < range.end; ++i) {
    test_support::RandomInstanceOptions o;
    o.tight_memory = true;
    o.offloadable_probability = (i % 3) == 0 ? 0.0 : 0.7;
    const Instance inst = test_support::random_instance(rng, o);
    const Schedule sch = test_support::random_valid_schedule(inst, rng, 0.4);
    if (!range.contains(i)) continue;  // drawn only to keep the engine in step
    SCOPED_TRACE("case " + std::to_string(i));
    const SimResult want = Simulator(inst).run(sch, SimOptions::quiet());
    deadlocks += want.feasible ? 0 : 1;
    Simulator open(inst);
    open.start_open();
    std::vector<std::size_t> next(inst.num_devices(), 0);
    Simulator::Step step = open.advance();
    while (step.kind == Simulator::Step::Kind::kDecision) {
      if (open.forward_wait_never_ends()) {
        ++fired;
        ASSERT_FALSE(want.feasible) << "the check cut lists that complete";
        // Early: no device's next F that is blocked so has its inputs done.
        const Simulator::Snapshot& st = open.snapshot();
        bool inputs_done = false;
        for (int d = 0; d < inst.num_devices(); ++d) {
          const auto& lst = st.owned.devices[d];
          if (st.running[d] || st.pc[d] >= static_cast<int>(lst.size())) continue;
          const Action& a = lst[st.pc[d]];
          if (a.type != OpType::F) continue;
          const double e = a.stage > 0 ? st.end[open.op_id(OpType::F, a.stage - 1, a.mb)] : 0.0;
          inputs_done = inputs_done || e == e;
        }
        early += inputs_done ? 0 : 1;
        break;
      }
      const auto& list = sch.devices[step.device];
      ASSERT_LT(next[step.device], list.size());
      open.append(step.device, list[next[step.device]++]);
      step = open.advance();
    }
  }
  EXPECT_GT(deadlocks, range.share(200));  // 298 of the 400 when written
  EXPECT_GT(fired, range.share(150));      // 227
  EXPECT_GT(early, range.share(10));       // 23
}
INSTANTIATE_TEST_SUITE_P(Seed29, SimulatorNeverEnds, testing::ValuesIn(case_ranges(400, 2)), case_range_name);

using SimulatorMakespan = test_support::CaseRangeTest;

TEST_P(SimulatorMakespan, IsAtLeastEveryDevicesBusyTime) {
  const CaseRange range = GetParam();
  std::mt19937 rng(3);
  for (int i = 0; i < range.end; ++i) {
    const Instance inst = test_support::random_instance(rng);
    const Schedule sch = test_support::random_valid_schedule(inst, rng, 0.4);
    if (!range.contains(i)) continue;  // drawn only to keep the engine in step
    SCOPED_TRACE("case " + std::to_string(i));
    const SimResult r = simulate(inst, sch);
    if (!r.feasible) continue;
    for (int d = 0; d < inst.num_devices(); ++d) EXPECT_GE(r.makespan, r.busy[d] - 1e-9);
    EXPECT_GE(r.bubble, -1e-12);
    EXPECT_LT(r.bubble, 1.0);
  }
}
INSTANTIATE_TEST_SUITE_P(Seed3, SimulatorMakespan, testing::ValuesIn(case_ranges(200, 2)), case_range_name);

}  // namespace
}  // namespace optpipe
