// plan/ (issue 22, part 3): the option space counted by hand, the planner's best against a brute
// force that solves every option exactly, the screens on random small cases, and the message
// when nothing fits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>

#include "instances/generator/generate.h"
#include "instances/generator/gpu_preset.h"
#include "instances/generator/model_shape.h"
#include "model/error.h"
#include "model/simulator.h"
#include "plan/option_costs.h"
#include "plan/option_screen.h"
#include "plan/option_space.h"
#include "plan/plan_runner.h"
#include "solve/solve_pipeline.h"

namespace optpipe {
namespace {

constexpr double kGiB = 1073741824.0;
constexpr double kInf = std::numeric_limits<double>::infinity();

// GPT-3 1.5B's shape (h 2304, 24 heads, f 9216) with `layers` layers and sequence `seq`.
plan::PlanRequest request(int layers, int gpus, int global_batch, int seq = 1024) {
  plan::PlanRequest q;
  q.base.model = gen::find_model_preset("gpt3-1.5b")->shape;
  q.base.model.layers = layers;
  q.base.model.seq = seq;
  q.base.gpu = *gen::find_gpu_preset("h100-sxm");
  q.gpus = gpus;
  q.global_batch = global_batch;
  return q;
}

// Options as (tp, pp, dp, placement, b, m, recompute) tuples, to count distinct ones.
using Key = std::tuple<int, int, int, int, int, int, int>;
Key key(const plan::PlanOption& o) {
  return {o.tp, o.pp, o.dp, static_cast<int>(o.placement), o.micro_batch, o.microbatches, static_cast<int>(o.recompute)};
}

bool mentions(const std::vector<std::string>& lines, const std::string& text) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(text) != std::string::npos; });
}

// 6 layers, 4 GPUs, global batch 8, micro-batch sizes 1, 2, 4, 8, recompute none and full
// (selective is the same as none with FlashAttention). By hand, (tp, pp, dp) and what each gives:
//   tp1: pp1 dp4 (2 sequences a replica: b 1, 2; one stage)      2 x 1 x 2 =  4
//        pp2 dp2 (4: b 1, 2, 4; one, v, loop: 2 or 4 stages)      3 x 3 x 2 = 18
//        pp4 dp1 (8: b 1, 2, 4, 8; one; v, loop need 8 stages)   4 x 1 x 2 =  8
//   tp2: pp1 dp2 (4: b 1, 2, 4)                                   3 x 1 x 2 =  6
//        pp2 dp1 (8: b 1, 2, 4, 8; one, v, loop)                  4 x 3 x 2 = 24
//   tp4: pp1 dp1 (8: b 1, 2, 4, 8)                                4 x 1 x 2 =  8
// 68 in all (24 heads and f = 9216 divide by 4; tensor parallelism stays within a node of 8).
TEST(PlanOptions, CountsByHandOnASmallCase) {
  const plan::PlanRequest q = request(6, 4, 8);
  const plan::OptionSpace space = plan::enumerate_options(q);
  EXPECT_EQ(space.options.size(), 68u);
  std::set<Key> distinct;
  for (const plan::PlanOption& o : space.options) {
    distinct.insert(key(o));
    EXPECT_EQ(o.tp * o.pp * o.dp, 4) << o.label();
    EXPECT_EQ(o.micro_batch * o.microbatches * o.dp, 8) << o.label();
    EXPECT_LE(o.stages(), 6) << o.label();
    EXPECT_NE(o.recompute, gen::Recompute::kSelective) << o.label();
    if (o.pp == 1) EXPECT_EQ(o.placement, Placement::kOnePerDevice) << o.label();
  }
  EXPECT_EQ(distinct.size(), space.options.size());
  EXPECT_TRUE(mentions(space.left_out, "8 stages (pp4 v): more stages than the 6 layers"));
  EXPECT_TRUE(mentions(space.left_out, "micro-batch 4 with dp4: does not divide the 2 sequences of a replica"));
  EXPECT_TRUE(mentions(space.left_out, "recompute selective: the same as none with FlashAttention"));

  // 6 heads: tensor parallel 4 no longer divides them, so tp4's 8 options go.
  plan::PlanRequest six = q;
  six.base.model.heads = 6;
  EXPECT_EQ(plan::enumerate_options(six).options.size(), 60u);
  EXPECT_EQ(plan::tensor_degrees(six), (std::vector<int>{1, 2}));
  // Without FlashAttention selective recomputation is a third mode: 68 / 2 x 3 = 102.
  plan::PlanRequest modes = q;
  modes.base.cost.flash_attention = false;
  EXPECT_EQ(plan::enumerate_options(modes).options.size(), 102u);
  // A global batch of 6: 4 replicas cannot share it.
  const plan::OptionSpace odd = plan::enumerate_options(request(6, 4, 6));
  EXPECT_TRUE(mentions(odd.left_out, "dp4: the global batch of 6 sequences does not divide among 4 replicas"));
  for (const plan::PlanOption& o : odd.options) EXPECT_EQ(o.micro_batch * o.microbatches * o.dp, 6);
}

TEST(PlanOptions, BadRequestsNameTheField) {
  auto message = [](plan::PlanRequest q) {
    try {
      plan::enumerate_options(q);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  plan::PlanRequest q = request(6, 4, 8);
  q.gpus = 0;
  EXPECT_NE(message(q).find("gpus: must be a positive integer"), std::string::npos);
  q = request(6, 4, 8);
  q.tensor_parallel = {3};
  EXPECT_NE(message(q).find("tensor_parallel: 3 does not divide the 8 GPUs of a node"), std::string::npos) << message(q);
  q.tensor_parallel = {8};
  EXPECT_NE(message(q).find("tensor_parallel: 8 does not divide the 4 GPUs"), std::string::npos) << message(q);
  q = request(6, 4, 8);
  q.micro_batch_sizes = {};
  EXPECT_NE(message(q).find("micro_batch_sizes"), std::string::npos);
}

// The brute force: every option with its starting split solved on its own (each proven optimal
// within a second on these sizes), its time per batch computed from its schedule; options over
// the memory limit must have no schedule at all.
struct Brute {
  double best = kInf;
  std::string best_label;
  std::map<std::string, double> spread;  // per option: its largest less its least device sync, ms
  int fits = 0;

  // How far the planner's best time `time` (of option `label`) may be from the brute force's:
  // the solver minimises the makespan, not the time per batch (the makespan plus the sync of
  // the device that ends last), so two optimal schedules of one option may differ by up to the
  // spread of its devices' syncs. If the two bests are options a (planner) and b (brute force):
  // the planner's time of b is at most b's + spread(b), and b, if cut, had a bound (at most its
  // time) at or above the planner's best; the brute force's time of a is at most a's + spread(a).
  double tolerance(const std::string& label) const {
    const auto a = spread.find(label), b = spread.find(best_label);
    return 1e-9 + std::max(a == spread.end() ? 0.0 : a->second, b == spread.end() ? 0.0 : b->second);
  }
};

Brute brute_force(const plan::PlanRequest& q) {
  Brute b;
  for (const plan::PlanOption& o : plan::enumerate_options(q).options) {
    const plan::Screened s = plan::screen_option(q, o);
    PipelineOptions po;
    po.time_limit = 1;
    if (!s.fits) {
      gen::GenerateOptions g = plan::generate_options(q, o);
      g.split = s.split;
      EXPECT_FALSE(solve_pipeline(gen::generate(g).instance, po).result.schedule) << o.label() << ": over memory";
      continue;
    }
    ++b.fits;
    const PipelineResult r = solve_pipeline(s.generated->instance, po);
    EXPECT_EQ(r.result.status, SolveResult::Status::kOptimal) << o.label();
    if (!r.result.schedule) continue;
    const SimResult sim = simulate(s.generated->instance, *r.result.schedule);
    const double time = plan::time_per_batch(plan::device_ends(sim), s.sync);
    const auto [lo, hi] = std::minmax_element(s.sync.begin(), s.sync.end());
    b.spread[o.label()] = *hi - *lo;
    if (time < b.best) b.best = time, b.best_label = o.label();
  }
  return b;
}

plan::PlanOptions exact(bool screens) {
  plan::PlanOptions o;
  o.time_limit = 30;
  o.partition_top = 0;
  o.screens = screens;
  o.min_solve_seconds = 0.5;
  return o;
}

// The planner's best is the best of all options solved separately (within Brute::tolerance: 0
// when the best options have one replica).
TEST(PlanRunner, BestEqualsTheBestOfSolvingEveryOptionSeparately) {
  plan::PlanRequest q = request(4, 4, 4, 512);
  q.micro_batch_sizes = {1, 2};
  q.recompute = {gen::Recompute::kNone, gen::Recompute::kFull};
  q.pipeline_parallel = {1, 2};  // up to 4 stages: every option proves within a second
  q.base.memory = {gen::MemoryLimit::Kind::kBytes, 4 * kGiB};
  const Brute b = brute_force(q);
  ASSERT_GT(b.fits, 3);
  const plan::PlanResult r = plan::run_plan(q, exact(true));
  ASSERT_GE(r.best, 0);
  const std::string label = r.options[r.best].option().label();
  EXPECT_NEAR(r.options[r.best].time, b.best, b.tolerance(label)) << label << " vs " << b.best_label;
  EXPECT_LT(r.solved, r.fitting) << "the screens cut nothing: the test does not exercise them";
  EXPECT_GT(r.over_memory, 0);
  // Every solved option's schedule runs on its instance at the reported time.
  for (const plan::OptionResult& o : r.options) {
    if (!o.solved) continue;
    const SimResult sim = simulate(*o.instance, *o.schedule);
    ASSERT_TRUE(sim.feasible) << o.option().label();
    EXPECT_NEAR(sim.makespan, o.makespan, 1e-9);
    EXPECT_LE(o.time_bound, o.time + 1e-9);
    EXPECT_LE(o.peak, o.limit);
  }
  // Best first.
  for (std::size_t i = 1; i < r.options.size(); ++i) {
    if (r.options[i].solved) EXPECT_LE(r.options[i - 1].time, r.options[i].time);
  }
  // The partition search on the best options can only make the best faster.
  plan::PlanOptions with_partition = exact(true);
  with_partition.partition_top = 2;
  const plan::PlanResult p = plan::run_plan(q, with_partition);
  ASSERT_GE(p.best, 0);
  EXPECT_LE(p.options[p.best].time, r.options[r.best].time + b.tolerance(label));
}

// Random small cases (2 or 4 GPUs, 1 or 2 pipeline devices, 3-6 layers, global batch 2 or 4,
// tight to generous memory, with and without offload): the screened plan finds the brute
// force's best, and without the bound screens (every option that fits solved) the same.
TEST(PlanRunner, ScreensNeverDiscardTheBestOnRandomSmallCases) {
  std::mt19937 rng(2211);
  int cut = 0;
  for (int c = 0; c < 6; ++c) {
    plan::PlanRequest q = request(std::uniform_int_distribution<int>(3, 6)(rng), rng() % 2 ? 4 : 2, rng() % 2 ? 4 : 2, 512);
    q.micro_batch_sizes = {1, 2};
    q.recompute = {gen::Recompute::kNone, gen::Recompute::kFull};
    q.pipeline_parallel = {1, 2};  // up to 4 stages: every option proves within a second
    if (rng() % 2) q.base.offload_levels = {0.0};
    // A limit 5% above the memory floor of a random option between the 20th and 70th percentile:
    // some options do not fit, some only just.
    std::vector<double> floors;
    for (const plan::PlanOption& o : plan::enumerate_options(q).options) {
      floors.push_back(plan::screen_option(q, o).floor.bytes);
    }
    std::sort(floors.begin(), floors.end());
    const std::size_t k = std::uniform_int_distribution<std::size_t>(floors.size() / 5, floors.size() * 7 / 10)(rng);
    q.base.memory = {gen::MemoryLimit::Kind::kBytes, std::ceil(floors[k] * 1.05)};
    const std::string what = "case " + std::to_string(c) + ": " + std::to_string(q.base.model.layers) + " layers, " +
                             std::to_string(q.gpus) + " GPUs, batch " + std::to_string(q.global_batch) + ", limit " +
                             std::to_string(q.base.memory.value / kGiB) + " GiB";
    const Brute b = brute_force(q);
    if (b.fits == 0) {
      EXPECT_THROW(plan::run_plan(q, exact(true)), plan::NothingFits) << what;
      continue;
    }
    const plan::PlanResult screened = plan::run_plan(q, exact(true));
    const plan::PlanResult all = plan::run_plan(q, exact(false));
    ASSERT_GE(screened.best, 0) << what;
    const std::string label = screened.options[screened.best].option().label();
    std::printf("%s: %d of %d options fit, %d solved, %d cut; best %.3f ms (%s), brute force %.3f ms, tolerance %.4f ms\n",
                what.c_str(), b.fits, screened.enumerated, screened.solved, screened.cut,
                screened.options[screened.best].time, label.c_str(), b.best, b.tolerance(label));
    EXPECT_NEAR(screened.options[screened.best].time, b.best, b.tolerance(label)) << what << ", brute force: " << b.best_label;
    EXPECT_NEAR(all.options[all.best].time, b.best, b.tolerance(all.options[all.best].option().label())) << what;
    EXPECT_EQ(all.solved, all.fitting) << what;
    cut += screened.cut;
  }
  EXPECT_GT(cut, 0) << "no option was cut by its bound in any case";
}

TEST(PlanRunner, NothingFitsNamesTheClosestOptionAndTheStage) {
  plan::PlanRequest q = request(6, 4, 8);
  q.base.memory = {gen::MemoryLimit::Kind::kBytes, 1 * kGiB};
  try {
    plan::run_plan(q, exact(true));
    FAIL() << "expected NothingFits";
  } catch (const plan::NothingFits& e) {
    const std::string m = e.what();
    // The closest on its default split: tp2 pp2 loop with full recomputation, 3.77 GiB on device 1.
    for (const char* part : {"no option fits the memory limit of 1.00 GiB per GPU (68 options screened)",
                             "the closest is tp2 pp2 dp1 loop, micro-batch 1 x 8, recompute full",
                             "the memory floor is device 1 (stage 3): static 3.67 GiB + stage 3's activation 105 MiB = "
                             "3.77 GiB, 2.77 GiB over the limit",
                             "stage 3 (device 1, with the output layer) needs at least 2.17 GiB"}) {
      EXPECT_NE(m.find(part), std::string::npos) << part << "\n" << m;
    }
  }
}

}  // namespace
}  // namespace optpipe
