// bench/solvers/single_stage.py, the single-stage variant of a plain pipeline (a diagnostic for
// the exact solver, bench/README.md): the kept stage is unchanged, every other stage is free,
// and the latency from F(s, j)'s end to B(s, j)'s start that the bounds read is preserved.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "engine/bounds/bound_problem.h"
#include "engine/instance_io.h"
#include "tests/test_paths.h"
#include "tests/test_util.h"

namespace optpipe {
namespace {

namespace fs = std::filesystem;
using testing::run_shell;
using testing::shell_quote;

std::string script() { return (fs::path(OPTPIPE_SOURCE_DIR) / "bench" / "solvers" / "single_stage.py").string(); }

bool have_python() { return run_shell("python3 -c 'print(1)'").status == 0; }

TEST(SingleStageVariant, KeepsTheStageAndItsLatencyAndFreesTheOthers) {
  if (!have_python()) GTEST_SKIP() << "python3 is not installed";
  const std::string original =
      (fs::path(OPTPIPE_SOURCE_DIR) / "instances" / "offload-slow-pcie-4x8.json").string();
  const Instance base = load_instance(original);
  const BoundProblem bp(base);
  for (int keep = 0; keep < base.num_stages(); ++keep) {
    SCOPED_TRACE("stage " + std::to_string(keep));
    const std::string out = testing::temp_file("single-stage", std::to_string(keep) + ".json");
    const auto r = run_shell("python3 " + shell_quote(script()) + " " + shell_quote(original) + " " +
                             std::to_string(keep) + " -o " + shell_quote(out));
    ASSERT_EQ(r.status, 0) << r.output;
    const Instance v = load_instance(out);
    ASSERT_EQ(v.num_stages(), base.num_stages());
    const Stage &a = base.stages[keep], &b = v.stages[keep];
    EXPECT_EQ(b.forward, a.forward);
    EXPECT_EQ(b.backward, a.backward);
    EXPECT_EQ(b.weight, a.weight);
    EXPECT_EQ(b.activation, a.activation);
    EXPECT_EQ(b.weight_activation, a.weight_activation);
    EXPECT_EQ(b.offload, a.offload);
    EXPECT_EQ(v.devices[keep].memory_limit, base.devices[keep].memory_limit);
    EXPECT_EQ(v.devices[keep].static_memory, base.devices[keep].static_memory);
    for (int s = 0; s < v.num_stages(); ++s) {
      if (s == keep) continue;
      EXPECT_EQ(v.stages[s].forward + v.stages[s].backward + v.stages[s].weight, 0.0) << "stage " << s;
      EXPECT_EQ(v.stages[s].activation, 0.0) << "stage " << s;
      EXPECT_FALSE(v.stages[s].offloadable()) << "stage " << s;
    }
    // The bounds' static latency of the kept stage is the original's.
    const BoundProblem vp(v);
    EXPECT_NEAR(vp.latency[keep], bp.latency[keep], 1e-9);
    fs::remove(out);
  }
  // Bad input: a clear message and exit status 2.
  const auto bad = run_shell("python3 " + shell_quote(script()) + " " + shell_quote(original) + " 7 -o /dev/null");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.output.find("stage 7 is not in 0..3"), std::string::npos) << bad.output;
}

}  // namespace
}  // namespace optpipe
