// Tests of the brute-force oracle (brute_force.h) that the solver's tests compare against:
//
// 1. Hand-checkable cases and closed-form counts of the lists of one device (a stage with split
//    backward and m microbatches has as many lists as standard Young tableaux of a 3 x m shape).
// 2. Against a plain enumeration of all permutations of a device's actions, filtered only by
//    check_structure(): the oracle's lists are all structurally valid, every valid list it skips
//    deadlocks even without memory limits, and both give the same optimum.
// 3. Against the proven optima of the shared conformance data (computed by an independent
//    implementation of the spec): the oracle finds the same optimal makespan on every instance,
//    and the given optimal schedule is one of the schedules it enumerates.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/action.h"
#include "model/instance_io.h"
#include "model/simulator.h"
#include "model/validator.h"
#include "tests/brute_force.h"
#include "tests/test_paths.h"
#include "tests/test_util.h"

namespace optpipe {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test_support::brute_force_optimum;
using test_support::BruteForceResult;
using test_support::GiB;

std::string list_text(const std::vector<Action>& list) {
  std::string out;
  for (const Action& a : list) out += to_string(a) + " ";
  return out;
}

std::string schedule_text(const Schedule& sch) {
  std::string out;
  for (int d = 0; d < sch.num_devices(); ++d) {
    out += "\n  device " + std::to_string(d) + ": " + list_text(sch.devices[d]);
  }
  return out;
}

// One device; stage s of `stages` gets the given offload flag.
Instance one_device(int stages, int m, bool split, bool offloadable, std::vector<double> levels,
                    double limit) {
  Instance inst;
  inst.name = "one-device";
  inst.microbatches = m;
  inst.split_backward = split;
  inst.offload_levels = std::move(levels);
  inst.comm.assign(static_cast<std::size_t>(stages - 1), 0.0);
  inst.devices.push_back({limit, 0.0, 0});
  for (int s = 0; s < stages; ++s) {
    Stage st;
    st.device = 0;
    st.forward = 1.0 + 0.25 * s;
    st.backward = 1.5;
    st.weight = split ? 0.75 : 0.0;
    st.activation = GiB;
    st.weight_activation = split ? GiB / 4 : 0.0;
    if (offloadable) {
      st.offload = 0.6;
      st.reload = 0.4;
    }
    inst.stages.push_back(st);
  }
  return inst;
}

TEST(BruteForce, OneStageUnitTimes) {
  // 1 device, 1 stage, m = 2, unit times, unlimited memory: the six ops run back to back.
  const Instance inst = test_support::uniform_instance(1, 2, 1.0, 1.0, 1.0);
  const BruteForceResult r = brute_force_optimum(inst);
  ASSERT_FALSE(r.aborted);
  ASSERT_TRUE(r.feasible);
  EXPECT_DOUBLE_EQ(r.optimum, 6.0);
  // F0 F1 B0 W0 B1 W1, F0 F1 B0 B1 W0 W1, F0 B0 F1 W0 B1 W1, F0 B0 F1 B1 W0 W1, F0 B0 W0 F1 B1 W1.
  EXPECT_EQ(r.schedules_enumerated, 5);
  EXPECT_EQ(r.feasible_count, 5);
  const Validation v = validate(inst, r.best);
  ASSERT_TRUE(v.valid()) << v.violations.front().message;
  EXPECT_DOUBLE_EQ(v.sim->makespan, 6.0);
}

TEST(BruteForce, ClosedFormListCounts) {
  const double inf = 1e18;
  // Split backward: a 3 x m grid poset (F_j < B_j < W_j, FIFO per type); its linear extensions
  // are the standard Young tableaux of shape (m, m, m): 1, 5, 42 for m = 1, 2, 3.
  EXPECT_EQ(test_support::device_candidate_lists(one_device(1, 1, true, false, {0, 1}, inf), 0).size(), 1u);
  EXPECT_EQ(test_support::device_candidate_lists(one_device(1, 2, true, false, {0, 1}, inf), 0).size(), 5u);
  EXPECT_EQ(test_support::device_candidate_lists(one_device(1, 3, true, false, {0, 1}, inf), 0).size(), 42u);
  // Fused backward: ballot sequences, the Catalan numbers 1, 2, 5.
  EXPECT_EQ(test_support::device_candidate_lists(one_device(1, 2, false, false, {0, 1}, inf), 0).size(), 2u);
  EXPECT_EQ(test_support::device_candidate_lists(one_device(1, 3, false, false, {0, 1}, inf), 0).size(), 5u);
  // Offload, m = 1: F B W, and F@r R B W for every r > 0.
  EXPECT_EQ(test_support::device_candidate_lists(one_device(1, 1, true, true, {0, 1}, inf), 0).size(), 2u);
  EXPECT_EQ(test_support::device_candidate_lists(one_device(1, 1, true, true, {0, 0.5, 1}, inf), 0).size(), 3u);
  // Offload, fused, m = 2, levels {0, 1}; R(s,j) goes anywhere between F(s,j) and B(s,j), R0
  // before R1:
  //   order F0 F1 B0 B1: (r0, r1) = (0,0): 1; (1,0): R0 after F0 or after F1: 2; (0,1): R1 after
  //   F1 or after B0: 2; (1,1): (R0, R1) after (F0, F1), (F0, B0), (F1, F1), (F1, B0): 4. Total 9.
  //   order F0 B0 F1 B1: each R has one place: 1 + 1 + 1 + 1 = 4. Total 13.
  EXPECT_EQ(test_support::device_candidate_lists(one_device(1, 2, false, true, {0, 1}, inf), 0).size(), 13u);
  // A non-offloadable stage never gets r > 0, whatever the levels.
  EXPECT_EQ(test_support::device_candidate_lists(one_device(1, 2, false, false, {0, 0.5, 1}, inf), 0).size(), 2u);
  // The limit stops the enumeration at limit + 1.
  EXPECT_EQ(test_support::device_candidate_lists(one_device(1, 3, true, false, {0, 1}, inf), 0, 10).size(), 11u);
  EXPECT_EQ(test_support::count_schedules(one_device(1, 3, true, false, {0, 1}, inf), 40), 41);
  EXPECT_EQ(test_support::count_schedules(one_device(1, 3, true, false, {0, 1}, inf), 42), 42);
  EXPECT_EQ(test_support::count_schedules(test_support::uniform_instance(2, 3, 1, 1, 1), 10'000), 42 * 42);
  EXPECT_EQ(test_support::count_schedules(test_support::uniform_instance(2, 3, 1, 1, 1), 1000), 1001);
  const BruteForceResult aborted = brute_force_optimum(test_support::uniform_instance(2, 3, 1, 1, 1), 1000);
  EXPECT_TRUE(aborted.aborted);
  EXPECT_EQ(aborted.schedules_enumerated, 0);
}

// Every structurally valid list of device d, found without any cleverness: every permutation of
// every action set the device may hold (each assignment of offload levels to its Fs, with the Rs
// that go with it), kept when check_structure() accepts it beside the oracle's first list of
// every other device (the structure rules concern each list alone).
std::vector<std::vector<Action>> all_valid_lists(const Instance& inst, int device) {
  std::vector<Action> compute;
  std::vector<std::pair<int, int>> offloadable_f;  // (s, j) of the Fs that may carry r > 0
  for (int s = 0; s < inst.num_stages(); ++s) {
    if (inst.stages[s].device != device) continue;
    for (int j = 0; j < inst.microbatches; ++j) {
      compute.push_back(make_f(s, j));
      compute.push_back(make_b(s, j));
      if (inst.split_backward) compute.push_back(make_w(s, j));
      if (inst.stages[s].offloadable()) offloadable_f.emplace_back(s, j);
    }
  }
  Schedule sch;
  sch.instance = inst.name;
  for (int d = 0; d < inst.num_devices(); ++d) {
    sch.devices.push_back(test_support::device_candidate_lists(inst, d, 0)[0]);
  }
  std::vector<std::vector<Action>> out;
  // Every assignment of levels to the offloadable Fs (mixed radix over offload_levels).
  const std::size_t L = inst.offload_levels.size();
  std::vector<std::size_t> digit(offloadable_f.size(), 0);
  while (true) {
    std::vector<Action> actions = compute;
    for (std::size_t k = 0; k < offloadable_f.size(); ++k) {
      const double r = inst.offload_levels[digit[k]];
      if (r <= 0) continue;
      const auto [s, j] = offloadable_f[k];
      for (Action& a : actions) {
        if (a.type == OpType::F && a.stage == s && a.mb == j) a.r = r;
      }
      actions.push_back(make_r(s, j));
    }
    std::vector<int> perm(actions.size());
    std::iota(perm.begin(), perm.end(), 0);
    do {
      std::vector<Action>& list = sch.devices[device];
      list.clear();
      for (int p : perm) list.push_back(actions[p]);
      if (check_structure(inst, sch, 1).empty()) out.push_back(list);
    } while (std::next_permutation(perm.begin(), perm.end()));
    std::size_t k = 0;
    while (k < digit.size() && ++digit[k] == L) digit[k++] = 0;
    if (k == digit.size()) break;
  }
  return out;
}

// The oracle against the whole product of every device's structurally valid lists: its lists
// are valid, every schedule it skips deadlocks (even without memory limits), and the number of
// schedules that complete and the optimum are the same.
void check_against_permutations(const Instance& inst) {
  const int D = inst.num_devices();
  std::vector<std::set<std::string>> oracle(D);
  std::vector<std::vector<std::vector<Action>>> valid(D);
  std::vector<std::vector<char>> is_candidate(D);  // [d][index into valid[d]]
  std::int64_t product = 1;
  for (int d = 0; d < D; ++d) {
    for (const auto& list : test_support::device_candidate_lists(inst, d)) {
      EXPECT_TRUE(oracle[d].insert(list_text(list)).second) << "listed twice: " << list_text(list);
    }
    valid[d] = all_valid_lists(inst, d);
    std::set<std::string> valid_text;
    for (const auto& list : valid[d]) {
      valid_text.insert(list_text(list));
      is_candidate[d].push_back(oracle[d].count(list_text(list)) > 0);
    }
    for (const std::string& text : oracle[d]) {
      EXPECT_TRUE(valid_text.count(text)) << "not structurally valid: " << text;
    }
    product *= static_cast<std::int64_t>(valid[d].size());
  }
  ASSERT_LE(product, 2'000'000) << "too many to enumerate in a test";
  SimOptions no_limit;
  no_limit.record_timeline = no_limit.record_memory = false;
  no_limit.enforce_memory_limit = false;
  SimOptions with_limit = no_limit;
  with_limit.enforce_memory_limit = true;
  Simulator sim(inst);
  Schedule sch;
  sch.instance = inst.name;
  sch.devices.resize(D);
  std::vector<std::size_t> index(D, 0);
  std::int64_t feasible = 0, skipped_but_completes = 0;
  double optimum = 1e300;
  while (true) {
    bool candidate = true;
    for (int d = 0; d < D; ++d) {
      sch.devices[d] = valid[d][index[d]];
      candidate = candidate && is_candidate[d][index[d]];
    }
    const SimResult r = sim.run(sch, with_limit);
    if (r.feasible) {
      ++feasible;
      optimum = std::min(optimum, r.makespan);
    }
    if (!candidate && (r.feasible || sim.run(sch, no_limit).feasible)) {
      if (++skipped_but_completes == 1) ADD_FAILURE() << "skipped, but completes:" << schedule_text(sch);
    }
    int d = D - 1;
    while (d >= 0 && ++index[d] == valid[d].size()) index[d--] = 0;
    if (d < 0) break;
  }
  EXPECT_EQ(skipped_but_completes, 0);
  const BruteForceResult r = brute_force_optimum(inst);
  ASSERT_FALSE(r.aborted);
  std::int64_t candidates = 1;
  std::string counts;
  for (int d = 0; d < D; ++d) {
    candidates *= static_cast<std::int64_t>(oracle[d].size());
    counts += (d ? " x " : "") + std::to_string(oracle[d].size()) + " of " + std::to_string(valid[d].size());
  }
  EXPECT_EQ(r.schedules_enumerated, candidates);
  EXPECT_EQ(r.feasible_count, feasible);
  ASSERT_EQ(r.feasible, feasible > 0);
  if (r.feasible) {
    EXPECT_DOUBLE_EQ(r.optimum, optimum);
  }
  std::printf("[ brute    ] candidate lists %s valid ones, %lld schedules complete, optimum %.6g\n",
              counts.c_str(), static_cast<long long>(feasible), r.optimum);
}

TEST(BruteForce, MatchesAllPermutationsOnOneDevice) {
  const double inf = 1e18;
  {
    SCOPED_TRACE("2 stages, m = 2, fused backward");
    check_against_permutations(one_device(2, 2, false, false, {0, 1}, inf));
  }
  {
    SCOPED_TRACE("2 stages, m = 1, split, offload, room for 1.5 activations");
    check_against_permutations(one_device(2, 1, true, true, {0, 1}, 1.5 * GiB));
  }
  {
    SCOPED_TRACE("1 stage, m = 2, split, offload, room for 1.25 activations");
    check_against_permutations(one_device(1, 2, true, true, {0, 1}, 1.25 * GiB));
  }
  {
    SCOPED_TRACE("1 stage, m = 2, fused, three levels, room for 1.5 activations");
    check_against_permutations(one_device(1, 2, false, true, {0, 0.5, 1}, 1.5 * GiB));
  }
}

TEST(BruteForce, MatchesAllPermutationsOnTwoDevices) {
  // Dependencies that run through the other device: on a V placement (stages 0, 3 on device 0;
  // 1, 2 on device 1) F0 must come before F3 and B3 before B0; with m = 1 and a split backward
  // that is all 720 x 720 permutations.
  {
    SCOPED_TRACE("V placement, m = 1, split");
    Instance inst = test_support::uniform_instance(2, 1, 1.0, 1.5, 0.5, 0.1);
    inst.name = "v-2x1";
    inst.comm.assign(3, 0.1);
    inst.stages.push_back(inst.stages[1]);
    inst.stages.push_back(inst.stages[0]);
    inst.stages[2].forward = 0.7;
    inst.stages[3].backward = 2.0;
    ASSERT_EQ(inst.placement(), Placement::kV);
    check_against_permutations(inst);
  }
  // Stages 0 and 2 on device 0, stage 1 on device 1, m = 2, fused backward, little memory.
  {
    SCOPED_TRACE("stages on devices 0, 1, 0, m = 2, fused, room for 2.5 activations");
    Instance inst = test_support::uniform_instance(2, 2, 1.0, 1.5, 0.0, 0.1, GiB, 0.0, 2.5 * GiB);
    inst.name = "0-1-0";
    inst.split_backward = false;
    inst.comm.assign(2, 0.1);
    inst.stages.push_back(inst.stages[0]);
    inst.stages[2].forward = 0.5;
    check_against_permutations(inst);
  }
  // Offload on one device, a shared PCIe group, m = 2, fused backward, little memory.
  {
    SCOPED_TRACE("2 stages, m = 2, fused, offload on stage 0, room for 1.5 activations");
    Instance inst = test_support::uniform_instance(2, 2, 1.0, 1.5, 0.0, 0.1, GiB, 0.0, 1.5 * GiB);
    inst.name = "off-2x2";
    inst.split_backward = false;
    inst.offload_levels = {0, 0.5, 1};
    inst.stages[0].offload = 0.4;
    inst.stages[0].reload = 0.3;
    inst.devices[1].pcie_group = 0;
    check_against_permutations(inst);
  }
}

// Instances of optima.json whose enumeration takes too long for the test suite (none so far).
bool too_big_to_enumerate(const std::string& /*name*/, std::int64_t count) { return count > 20'000'000; }

TEST(BruteForce, MatchesProvenOptima) {
  const fs::path dir(OPTPIPE_CONFORMANCE_DIR);
  ASSERT_TRUE(fs::exists(dir / "optima.json")) << "no conformance data at " << dir;
  const json optima = json::parse(read_text_file((dir / "optima.json").string()));
  ASSERT_FALSE(optima.empty());
  std::vector<std::string> skipped;
  for (const auto& [name, entry] : optima.items()) {
    SCOPED_TRACE(name);
    const Instance inst = load_instance((dir / (name + ".json")).string());
    const double expected = entry["optimal_makespan"].get<double>();
    // The given optimal schedule is one of the enumerated schedules.
    const auto given_lists = entry["an_optimal_schedule"].get<std::vector<std::vector<std::string>>>();
    const Schedule given = test_support::lists(inst, given_lists);
    for (int d = 0; d < inst.num_devices(); ++d) {
      const auto candidates = test_support::device_candidate_lists(inst, d, 10'000'000);
      EXPECT_NE(std::find(candidates.begin(), candidates.end(), given.devices[d]), candidates.end())
          << "device " << d << "'s optimal list is not enumerated: " << list_text(given.devices[d]);
    }
    const std::int64_t count = test_support::count_schedules(inst, 1'000'000'000);
    if (too_big_to_enumerate(name, count)) {
      skipped.push_back(name + " (" + std::to_string(count) + " schedules)");
      continue;
    }
    const auto t0 = std::chrono::steady_clock::now();
    const BruteForceResult r = brute_force_optimum(inst);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("[ brute    ] %-22s %10lld schedules, %9lld complete, optimum %.15g, %.2f s\n", name.c_str(),
                static_cast<long long>(r.schedules_enumerated), static_cast<long long>(r.feasible_count),
                r.optimum, seconds);
    ASSERT_FALSE(r.aborted);
    EXPECT_EQ(r.schedules_enumerated, count);
    ASSERT_TRUE(r.feasible);
    EXPECT_NEAR(r.optimum, expected, 1e-9) << "oracle's best:" << schedule_text(r.best);
    const Validation v = validate(inst, r.best);
    ASSERT_TRUE(v.valid()) << v.violations.front().message;
    EXPECT_NEAR(v.sim->makespan, r.optimum, 1e-12);
  }
  if (!skipped.empty()) {
    std::string list;
    for (const auto& s : skipped) list += " " + s;
    GTEST_SKIP() << "too many schedules to enumerate here:" << list;
  }
}

}  // namespace
}  // namespace optpipe
