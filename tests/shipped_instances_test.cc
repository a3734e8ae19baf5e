// The "done when" of the foundation: for every shipped instance, the best heuristic finds a
// valid schedule that completes within memory, with its makespan, bubble and peaks.
#include <gtest/gtest.h>

#include <filesystem>

#include "model/instance_io.h"
#include "model/validator.h"
#include "heuristics/registry.h"
#include "tests/test_paths.h"

namespace optpipe {
namespace {

namespace fs = std::filesystem;

TEST(ShippedInstances, BestHeuristicFindsAValidScheduleForEach) {
  const fs::path dir = fs::path(OPTPIPE_SOURCE_DIR) / "instances";
  int count = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    SCOPED_TRACE(entry.path().filename().string());
    std::vector<std::string> warnings;
    const Instance inst = load_instance(entry.path().string(), &warnings);
    EXPECT_TRUE(warnings.empty());
    const BestResult best = run_all_heuristics(inst);
    const HeuristicResult* r = best.best_result();
    ASSERT_NE(r, nullptr) << "no heuristic fits " << entry.path();
    const Validation v = validate(inst, *r->schedule);
    ASSERT_TRUE(v.valid()) << v.violations.front().message;
    EXPECT_NEAR(v.sim->makespan, *r->schedule->makespan, 1e-9);
    EXPECT_NEAR(v.sim->bubble, *r->schedule->bubble, 1e-12);
    ASSERT_EQ(r->schedule->peak_memory.size(), inst.devices.size());
    for (int d = 0; d < inst.num_devices(); ++d) {
      EXPECT_LE(v.sim->peak_memory[d], inst.devices[d].memory_limit + kMemoryTolerance);
    }
    ++count;
  }
  EXPECT_GE(count, 10);
}

}  // namespace
}  // namespace optpipe
