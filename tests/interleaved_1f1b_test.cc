// Tests of interleaved 1F1B (Megatron's virtual-pipeline schedule, arXiv 2104.04473) on loop
// placements: validity on many instances, Megatron's order when p divides m, the rank-0 peak of
// PipeOffload §3.1 and the bubble of 1/v of 1F1B's. Expectations come from the papers' formulas.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "model/simulator.h"
#include "model/validator.h"
#include "heuristics/interleaved_1f1b.h"
#include "heuristics/one_f_one_b.h"
#include "tests/test_util.h"

namespace optpipe {
namespace {

using test_support::GiB;

// d devices, S = v·d stages in the loop placement, equal times, unlimited memory, static 0.
Instance loop_instance(int d, int v, int m, double f, double b, double w, bool split, double act = GiB,
                       double wact = GiB / 2) {
  Instance inst;
  inst.name = "loop-" + std::to_string(d) + "x" + std::to_string(v) + "x" + std::to_string(m);
  inst.microbatches = m;
  inst.split_backward = split;
  const int S = v * d;
  inst.comm.assign(static_cast<std::size_t>(S - 1), 0.0);
  for (int i = 0; i < d; ++i) inst.devices.push_back({1e18, 0.0, i});
  for (int s = 0; s < S; ++s) {
    Stage st;
    st.device = s % d;
    st.forward = f;
    st.backward = b;
    st.weight = w;
    st.activation = act;
    st.weight_activation = split ? wact : 0.0;
    inst.stages.push_back(st);
  }
  return inst;
}

TEST(Interleaved1F1B, ValidOnManyLoopInstances) {
  // m = 1, m < p, m = p, m not a multiple of p (one or more rounds of unequal size), m >= 3p.
  std::mt19937 rng(2104);
  const Interleaved1F1B h;
  int checked = 0;
  for (int d = 1; d <= 6; ++d) {
    for (int v = 2; v <= 4; ++v) {
      for (int m = 1; m <= 3 * d + 5; ++m) {
        for (bool split : {true, false}) {
          Instance inst = loop_instance(d, v, m, 1, 1, 1, split);
          test_support::randomise_costs(inst, rng);
          const std::string what =
              "d=" + std::to_string(d) + " v=" + std::to_string(v) + " m=" + std::to_string(m);
          const Built built = h.build(inst);
          ASSERT_TRUE(built.schedule.has_value()) << what << ": " << built.reason;
          const auto violations = check_structure(inst, *built.schedule);
          ASSERT_TRUE(violations.empty()) << what << ": " << violations.front().message;
          SimOptions opt;
          opt.enforce_memory_limit = false;
          const SimResult sim = simulate(inst, *built.schedule, opt);
          ASSERT_TRUE(sim.feasible) << what << ": " << sim.reason;
          EXPECT_TRUE(validate(inst, *built.schedule).valid()) << what;
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 500);
}

TEST(Interleaved1F1B, DeclinesOtherPlacements) {
  const Instance plain = test_support::uniform_instance(4, 8, 1, 1, 1);
  const Built built = Interleaved1F1B().build(plain);
  EXPECT_FALSE(built.schedule.has_value());
  EXPECT_NE(built.reason.find("loop"), std::string::npos) << built.reason;
  // The V placement with d >= 2 is not a loop.
  Instance v = loop_instance(3, 2, 6, 1, 1, 1, true);
  for (int s = 0; s < 6; ++s) v.stages[s].device = s < 3 ? s : 5 - s;
  ASSERT_EQ(v.placement(), Placement::kV);
  EXPECT_FALSE(Interleaved1F1B().build(v).schedule.has_value());
}

TEST(Interleaved1F1B, MegatronOrderWhenPDividesM) {
  // Narayanan et al. / Megatron: rank r runs min(2(p-r-1) + (v-1)p, vm) warm-up forwards; the
  // k-th forward is chunk (k mod pv) div p of microbatch (k div pv)·p + k mod p, the k-th
  // backward the same microbatch with chunk v-1-(that chunk); then strict 1F1B alternation.
  for (int p : {2, 3, 4}) {
    for (int v : {2, 3}) {
      for (int m : {p, 2 * p, 3 * p}) {
        const Instance inst = loop_instance(p, v, m, 1, 1, 1, /*split=*/false);
        const Built built = Interleaved1F1B().build(inst);
        ASSERT_TRUE(built.schedule);
        for (int r = 0; r < p; ++r) {
          const auto& list = built.schedule->devices[r];
          std::vector<Action> fs, bs;
          for (const Action& a : list) (a.type == OpType::F ? fs : bs).push_back(a);
          ASSERT_EQ(static_cast<int>(fs.size()), v * m);
          for (int k = 0; k < v * m; ++k) {
            const int chunk = (k % (p * v)) / p, mb = (k / (p * v)) * p + k % p;
            EXPECT_EQ(fs[k], make_f(chunk * p + r, mb)) << "p=" << p << " v=" << v << " m=" << m << " r=" << r
                                                        << " k=" << k;
            EXPECT_EQ(bs[k], make_b((v - 1 - chunk) * p + r, mb)) << "p=" << p << " v=" << v << " r=" << r;
          }
          const int warmup = std::min(2 * (p - r - 1) + (v - 1) * p, v * m);
          const auto is_b = [](const Action& a) { return a.type == OpType::B; };
          const auto first_b = std::find_if(list.begin(), list.end(), is_b);
          EXPECT_EQ(first_b - list.begin(), warmup + (warmup < v * m ? 1 : 0)) << "p=" << p << " r=" << r;
          // After the warm-up: F, B, F, B, ... for the v·m - warmup steady pairs.
          for (int i = warmup; i < 2 * v * m - warmup; i += 2) {
            EXPECT_EQ(list[i].type, OpType::F);
            EXPECT_EQ(list[i + 1].type, OpType::B);
          }
        }
      }
    }
  }
}

TEST(Interleaved1F1B, RankZeroPeak) {
  // PipeOffload §3.1: interleaved 1F1B's rank 0 peaks at dv + d - 1 stage activations (its
  // warm-up count + 1), i.e. (v+1)/v of 1F1B's p·M_B up to one stage activation. Exact in
  // stage-activation units for vm >= dv + d - 1, whatever M_W (W runs right after its B, before
  // the next F). When p does not divide m, the documented generalisation sizes the warm-up by the
  // first round, g0 = ceil(m / (m div p)) microbatches: 2(p-1) + (v-1)·g0 + 1.
  for (int p : {2, 4, 6, 8}) {
    for (int v : {2, 3, 4}) {
      for (int m : {3 * p, 3 * p + 1, 4 * p - 1}) {
        for (double wfrac : {0.0, 0.5, 1.0}) {
          const Instance inst = loop_instance(p, v, m, 1, 1, 1, true, GiB, wfrac * GiB);
          const Built built = Interleaved1F1B().build(inst);
          ASSERT_TRUE(built.schedule);
          SimOptions opt;
          opt.enforce_memory_limit = false;
          const SimResult sim = simulate(inst, *built.schedule, opt);
          const int rounds = m / p, g0 = (m + rounds - 1) / rounds;
          const std::string what =
              "p=" + std::to_string(p) + " v=" + std::to_string(v) + " m=" + std::to_string(m);
          EXPECT_NEAR(sim.peak_memory[0] / GiB, 2 * (p - 1) + (v - 1) * g0 + 1, 1e-9) << what;
          const double peak = *std::max_element(sim.peak_memory.begin(), sim.peak_memory.end());
          EXPECT_NEAR(peak, sim.peak_memory[0], 1e-9) << "rank 0 holds the most, " << what;
          if (m % p != 0) continue;
          EXPECT_NEAR(sim.peak_memory[0] / GiB, p * v + p - 1, 1e-9) << what;
          // In units of one device's worth of a microbatch (v stage activations): ≈ (v+1)/v · p.
          EXPECT_NEAR(peak / (v * GiB), (v + 1.0) / v * p, 1.0) << what;
        }
      }
    }
  }
}

TEST(Interleaved1F1B, BubbleIsOneVthOfOneFOneB) {
  // [PO] Table 1 / Narayanan et al. §2.2.2: with per-chunk times the interleaved bubble is
  // (p-1)(T_F+T_B+T_W), against v·(p-1)(T_F+T_B+T_W) for 1F1B on the same model (per-device
  // times v·T). Fused backward as in that analysis (our unsplit B lasts backward + weight), m a
  // multiple of p, comm 0. The derivation is exact for this steady pattern; we allow one chunk
  // pass (1 time unit) for warm-up/cool-down edge effects.
  for (int p : {2, 4, 8}) {
    for (int v : {2, 4}) {
      for (int m : {p, 2 * p, 4 * p}) {
        const Instance inst = loop_instance(p, v, m, 1, 1, 1, /*split=*/false);
        const Built built = Interleaved1F1B().build(inst);
        ASSERT_TRUE(built.schedule);
        SimOptions opt;
        opt.enforce_memory_limit = false;
        const double bubble = test_support::span_bubble(*built.schedule, simulate(inst, *built.schedule, opt));

        Instance one = test_support::uniform_instance(p, m, v, v, v);
        one.split_backward = false;
        const Built ref = OneFOneB().build(one);
        ASSERT_TRUE(ref.schedule);
        const double ref_bubble = test_support::span_bubble(*ref.schedule, simulate(one, *ref.schedule, opt));
        EXPECT_NEAR(ref_bubble, 3.0 * v * (p - 1), 1e-9);
        EXPECT_NEAR(bubble, ref_bubble / v, 1.0) << "p=" << p << " v=" << v << " m=" << m;
      }
    }
  }
}

}  // namespace
}  // namespace optpipe
