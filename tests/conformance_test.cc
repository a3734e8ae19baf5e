// Conformance vectors (tests/data/conformance, a copy of ../shared/conformance, computed from
// the spec by an independent implementation): simulated makespans, bubbles and peaks of given schedules, deadlocks, and
// proven optima. A disagreement means one side misreads the spec.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "model/instance_io.h"
#include "model/schedule.h"
#include "model/simulator.h"
#include "model/validator.h"
#include "tests/test_paths.h"
#include "tests/test_util.h"

namespace optpipe {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path conformance_dir() { return fs::path(OPTPIPE_CONFORMANCE_DIR); }

bool have_conformance() { return fs::exists(conformance_dir() / "vectors.json"); }

Instance load_named(const std::string& name) {
  return load_instance((conformance_dir() / (name + ".json")).string());
}

Schedule schedule_from_lists(const Instance& inst, const json& devices) {
  return test_support::lists(inst, devices.get<std::vector<std::vector<std::string>>>());
}

json load_json(const fs::path& p) { return json::parse(read_text_file(p.string())); }

TEST(Conformance, SimulatedVectors) {
  ASSERT_TRUE(have_conformance()) << "no conformance data at " << conformance_dir();
  const json vectors = load_json(conformance_dir() / "vectors.json");
  ASSERT_GE(vectors.size(), 40u);
  std::map<std::string, Instance> instances;
  int feasible = 0, infeasible = 0;
  for (std::size_t i = 0; i < vectors.size(); ++i) {
    const json& v = vectors[i];
    const std::string name = v["instance"];
    if (!instances.count(name)) instances.emplace(name, load_named(name));
    const Instance& inst = instances.at(name);
    const Schedule sch = schedule_from_lists(inst, v["devices"]);
    SCOPED_TRACE("vector " + std::to_string(i) + " on " + name);
    const auto structure = check_structure(inst, sch);
    ASSERT_TRUE(structure.empty()) << structure.front().message;
    const SimResult r = simulate(inst, sch);
    const json& e = v["expect"];
    if (e.contains("infeasible")) {
      EXPECT_FALSE(r.feasible) << "expected a deadlock; got makespan " << r.makespan;
      EXPECT_FALSE(r.reason.empty());
      ++infeasible;
    } else {
      ASSERT_TRUE(r.feasible) << r.reason;
      EXPECT_NEAR(r.makespan, e["makespan"].get<double>(), 1e-9);
      EXPECT_NEAR(r.bubble, e["bubble"].get<double>(), 1e-9);
      ASSERT_EQ(r.peak_memory.size(), e["peak_bytes"].size());
      for (std::size_t d = 0; d < r.peak_memory.size(); ++d) {
        EXPECT_NEAR(r.peak_memory[d], e["peak_bytes"][d].get<double>(), 1.0) << "device " << d;
      }
      ++feasible;
    }
  }
  EXPECT_GT(feasible, 0);
  EXPECT_GT(infeasible, 0);
}

TEST(ConformanceData, MatchesTheSharedCopy) {
  const fs::path shared(OPTPIPE_SHARED_CONFORMANCE_DIR);
  if (!fs::exists(shared / "vectors.json")) GTEST_SKIP() << "no shared conformance data at " << shared;
  int compared = 0;
  for (const auto& entry : fs::directory_iterator(shared)) {
    if (entry.path().extension() != ".json") continue;
    const fs::path mine = conformance_dir() / entry.path().filename();
    ASSERT_TRUE(fs::exists(mine)) << mine << " is missing: copy " << entry.path() << " into the repository";
    EXPECT_EQ(read_text_file(mine.string()), read_text_file(entry.path().string()))
        << mine << " differs from " << entry.path() << ": the shared data changed, update the copy";
    ++compared;
  }
  EXPECT_GT(compared, 5);
}

TEST(Conformance, OptimalSchedulesReachTheirOptimum) {
  ASSERT_TRUE(have_conformance()) << "no conformance data at " << conformance_dir();
  const json optima = load_json(conformance_dir() / "optima.json");
  ASSERT_FALSE(optima.empty());
  for (const auto& [name, entry] : optima.items()) {
    SCOPED_TRACE(name);
    const Instance inst = load_named(name);
    const Schedule sch = schedule_from_lists(inst, entry["an_optimal_schedule"]);
    const Validation v = validate(inst, sch);
    ASSERT_TRUE(v.valid()) << v.violations.front().message;
    EXPECT_NEAR(v.sim->makespan, entry["optimal_makespan"].get<double>(), 1e-9);
  }
}

}  // namespace
}  // namespace optpipe
