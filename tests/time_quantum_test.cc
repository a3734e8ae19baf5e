// The time quantum (model/time_quantum.h): what it reads from an instance, its rounding, and the
// property the search builds on: every time of a simulated schedule is a whole multiple of it.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "model/simulator.h"
#include "model/time_quantum.h"
#include "tests/test_util.h"

namespace optpipe {
namespace {

Instance two_stages(double f, double b, double w, double comm) {
  Instance inst;
  inst.name = "q";
  inst.microbatches = 2;
  inst.devices = {Device{100, 0, 0}, Device{100, 0, 0}};
  for (int s = 0; s < 2; ++s) {
    Stage st;
    st.device = s;
    st.forward = f;
    st.backward = b;
    st.weight = w;
    st.activation = 1;
    inst.stages.push_back(st);
  }
  inst.comm = {comm};
  return inst;
}

bool on_lattice(double t, double q) {
  const double n = std::round(t / q);
  return std::fabs(t - n * q) <= 1e-9;
}

TEST(TimeQuantum, TheFewestDecimalsThenTheirGreatestCommonDivisor) {
  EXPECT_DOUBLE_EQ(time_quantum(two_stages(1.45, 0.94, 0.68, 0.05)), 0.01);
  EXPECT_DOUBLE_EQ(time_quantum(two_stages(1.5, 0.5, 1.0, 0.1)), 0.1);
  EXPECT_DOUBLE_EQ(time_quantum(two_stages(1.25, 0.5, 0.75, 0.25)), 0.25);  // 125, 50, 75, 25 hundredths
  EXPECT_DOUBLE_EQ(time_quantum(two_stages(3, 6, 9, 0)), 3);
  EXPECT_EQ(time_quantum(two_stages(0, 0, 0, 0)), 0);                     // nothing to divide
  EXPECT_EQ(time_quantum(two_stages(1.0 / 3, 1, 1, 0)), 0);               // no decimal quantum
  EXPECT_EQ(time_quantum(two_stages(1.00001, 1, 1, 0)), 0);               // finer than kMinTimeQuantum
  EXPECT_DOUBLE_EQ(time_quantum(two_stages(1.0001, 1, 1, 0)), 0.0001);
  // So long that rounding noise could reach a hundredth of the quantum: none. Two stages of
  // 4.5 s a microbatch each, 0.01 ms: fine at 10 microbatches, not at 200,000 (a horizon of 1.8e9 ms).
  Instance longer = two_stages(1500.01, 1500, 1500, 0);
  longer.microbatches = 10;
  EXPECT_DOUBLE_EQ(time_quantum(longer), 0.01);
  longer.microbatches = 200000;
  EXPECT_EQ(time_quantum(longer), 0);

  // An offload level scales the transfer times: half of 1.37 ms is 0.685.
  Instance off = two_stages(1.4, 1.2, 0.6, 0.1);
  off.stages[0].offload = 1.37;
  off.stages[0].reload = 1.2;
  EXPECT_DOUBLE_EQ(time_quantum(off), 0.01);
  off.offload_levels = {0.0, 0.5, 1.0};
  EXPECT_DOUBLE_EQ(time_quantum(off), 0.005);
}

TEST(TimeQuantum, RoundsBoundsUpAndTargetsDownWithinTheirNoise) {
  EXPECT_DOUBLE_EQ(quantum_ceil(33.308, 0.01), 33.31);
  EXPECT_DOUBLE_EQ(quantum_ceil(33.31 - 1e-7, 0.01), 33.31);  // a relaxation's hair below
  EXPECT_DOUBLE_EQ(quantum_ceil(33.31 + 1e-12, 0.01), 33.31); // a sum's noise above
  EXPECT_DOUBLE_EQ(quantum_ceil(33.3101, 0.01), 33.32);
  EXPECT_DOUBLE_EQ(quantum_ceil(1e6 + 1e-5, 0.01), 1e6);     // noise grows with the value
  EXPECT_DOUBLE_EQ(quantum_floor(33.319, 0.01), 33.31);
  EXPECT_DOUBLE_EQ(quantum_floor(33.32 - 1e-14, 0.01), 33.32);  // noise below
  EXPECT_DOUBLE_EQ(quantum_floor(33.32 - 2e-9, 0.01), 33.31);   // a target just below the incumbent
  EXPECT_EQ(quantum_ceil(33.308, 0), 33.308);
  EXPECT_EQ(quantum_floor(33.308, 0), 33.308);
  EXPECT_EQ(quantum_ceil(INFINITY, 0.01), INFINITY);
  EXPECT_EQ(quantum_floor(INFINITY, 0.01), INFINITY);
}

// The premise: on random instances whose times are multiples of q, with and without offload,
// every start and end of every compute op and transfer of a random schedule (and so its
// makespan) is a multiple of time_quantum(), itself a multiple of q (of q / 2 with the level 0.5).
TEST(TimeQuantum, EverySimulatedTimeIsAMultipleOfIt) {
  std::mt19937 rng(2611);
  const double quanta[] = {0.01, 0.05, 0.1, 0.25, 1.0};
  int checked = 0, with_transfers = 0;
  for (int c = 0; c < 600; ++c) {
    test_support::RandomInstanceOptions o;
    o.offloadable_probability = 0.7;
    Instance inst = test_support::random_instance(rng, o);
    const double q = quanta[c % 5];
    test_support::quantize_times(inst, q);
    if (std::uniform_int_distribution<int>(0, 2)(rng) == 0) inst.offload_levels = {0.0, 0.5, 1.0};
    const double tq = time_quantum(inst);
    if (!(tq > 0)) continue;  // every time rounded to 0
    const double unit = inst.offload_levels.size() > 2 ? q / 2 : q;  // the level 0.5 halves it
    ASSERT_TRUE(on_lattice(tq, unit)) << "case " << c << ": " << tq << " is not a multiple of " << unit;
    const Schedule sch = test_support::random_valid_schedule(inst, rng, 0.5);
    const SimResult r = simulate(inst, sch);
    if (!r.feasible) continue;
    ++checked;
    EXPECT_TRUE(on_lattice(r.makespan, tq)) << "case " << c << ": makespan " << r.makespan << ", quantum " << tq;
    for (const auto& dev : r.timeline) {
      for (const ActionTiming& a : dev) {
        if (!a.done()) continue;
        ASSERT_TRUE(on_lattice(a.start, tq) && on_lattice(a.end, tq)) << "case " << c << ": " << a.start << "-" << a.end;
      }
    }
    if (!r.transfers.empty()) ++with_transfers;
    for (const Transfer& t : r.transfers) {
      ASSERT_TRUE(on_lattice(t.start, tq) && on_lattice(t.end, tq)) << "case " << c << ": transfer " << t.start;
    }
  }
  EXPECT_GT(checked, 300);
  EXPECT_GT(with_transfers, 50);
}

}  // namespace
}  // namespace optpipe
