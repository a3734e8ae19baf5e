// `optpipe profile` (runtime/profiler.h): the measured instance is a valid spec instance with
// the model's real bytes and positive times, and it can be scheduled and run.
#include "runtime/profiler.h"

#include <gtest/gtest.h>

#include "model/instance_io.h"
#include "heuristics/registry.h"
#include "runtime/train.h"
#include "tests/test_util.h"

namespace optpipe {
namespace {

TEST(Profiler, MeasuredInstanceHasTheModelsBytesAndPositiveTimes) {
  Instance layout = test_support::uniform_instance(3, 4, 1, 1, 1, 0.1);
  layout.name = "layout";
  runtime::MlpConfig m;
  m.width = 8;
  m.rows = 2;
  runtime::ProfileOptions o;
  o.warmup = 1;
  o.repeats = 3;
  const Instance got = runtime::profile_mlp(layout, m, o);
  EXPECT_EQ(got.name, "layout-measured");
  ASSERT_EQ(got.num_stages(), 3);
  const runtime::MlpConfig cfg = runtime::model_config_for(layout, m);
  for (int s = 0; s < 3; ++s) {
    const Stage& st = got.stages[static_cast<std::size_t>(s)];
    const runtime::StageShapes sh = runtime::mlp_shapes(cfg, s);
    EXPECT_GT(st.forward, 0);
    EXPECT_GT(st.backward, 0);
    EXPECT_GT(st.weight, 0);
    EXPECT_EQ(st.activation, static_cast<double>(sh.keep_for_b));
    EXPECT_EQ(st.weight_activation, static_cast<double>(sh.keep_for_w));
    ASSERT_TRUE(st.offload.has_value());
    EXPECT_GE(*st.offload, 0);
  }
  ASSERT_EQ(got.comm.size(), 2u);
  for (double c : got.comm) EXPECT_GT(c, 0);
  // A valid file: it reads back, a heuristic schedules it and the executor runs that schedule.
  const Instance back = instance_from_json(instance_to_json(got));
  EXPECT_EQ(back.num_stages(), 3);
  const BestResult best = run_all_heuristics(back, false);
  ASSERT_NE(best.best_result(), nullptr);
  runtime::TrainOptions t;
  t.model = m;
  t.executor.iterations = 2;
  const runtime::TrainResult r = runtime::train(back, *best.best_result()->schedule, t);
  EXPECT_EQ(r.losses.size(), 2u);
}

}  // namespace
}  // namespace optpipe
