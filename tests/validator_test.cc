// The validator (model/validator.h): one minimal schedule per rule of spec §3, each breaking
// exactly that rule, and the message naming the place and the action.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/validator.h"
#include "tests/test_util.h"

namespace optpipe {
namespace {

using test_support::GiB;
using test_support::lists;
using test_support::uniform_instance;

// 2 devices, 2 microbatches, F = B = W = 1, no comm, unlimited memory.
Instance two_by_two() { return uniform_instance(2, 2, 1, 1, 1); }

// One device, one stage that can be offloaded, 2 microbatches.
Instance offloadable(double limit = 1e18) {
  Instance inst = uniform_instance(1, 2, 1, 1, 1, 0, GiB, GiB / 2, limit);
  inst.stages[0].offload = 0.5;
  inst.stages[0].reload = 0.5;
  return inst;
}

// Expects exactly one violation, of `rule`, whose message contains every one of `words`.
void expect_only(const std::vector<Violation>& violations, Rule rule,
                 std::initializer_list<std::string> words) {
  ASSERT_EQ(violations.size(), 1u) << [&] {
    std::string all;
    for (const auto& v : violations) all += std::string("\n  [") + to_string(v.rule) + "] " + v.message;
    return all;
  }();
  EXPECT_EQ(violations[0].rule, rule) << to_string(violations[0].rule) << ": " << violations[0].message;
  const std::string& msg = violations[0].message;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  for (const auto& w : words) EXPECT_NE(msg.find(w), std::string::npos) << "\"" << w << "\" not in: " << msg;
}

// Both check_structure() and validate() report exactly that one violation, and validate() does
// not simulate a structurally invalid schedule.
void expect_structural(const Instance& inst, const Schedule& sch, Rule rule,
                       std::initializer_list<std::string> words) {
  expect_only(check_structure(inst, sch), rule, words);
  const Validation v = validate(inst, sch);
  EXPECT_FALSE(v.valid());
  EXPECT_FALSE(v.sim.has_value());
  expect_only(v.violations, rule, words);
}

TEST(Validator, ValidScheduleHasNoViolations) {
  const Instance inst = two_by_two();
  const Schedule sch = lists(inst, {{"F0.0", "F0.1", "B0.0", "W0.0", "B0.1", "W0.1"},
                                    {"F1.0", "B1.0", "W1.0", "F1.1", "B1.1", "W1.1"}});
  EXPECT_TRUE(check_structure(inst, sch).empty());
  const Validation v = validate(inst, sch);
  EXPECT_TRUE(v.valid());
  EXPECT_TRUE(v.violations.empty());
  ASSERT_TRUE(v.sim.has_value());
  EXPECT_TRUE(v.sim->feasible) << v.sim->reason;
  EXPECT_DOUBLE_EQ(v.sim->makespan, 8.0);

  // With an offload, R between F and B.
  const Instance off = offloadable();
  const Schedule osch = lists(off, {{"F0.0@1", "F0.1", "R0.0", "B0.0", "W0.0", "B0.1", "W0.1"}});
  const Validation ov = validate(off, osch);
  EXPECT_TRUE(ov.valid()) << (ov.violations.empty() ? "" : ov.violations[0].message);
  ASSERT_TRUE(ov.sim.has_value());
  EXPECT_TRUE(ov.sim->feasible);
}

TEST(Validator, RuleNames) {
  EXPECT_STREQ(to_string(Rule::kDeviceCount), "device-count");
  EXPECT_STREQ(to_string(Rule::kDuplicate), "duplicate");
  EXPECT_STREQ(to_string(Rule::kReloadOrder), "reload-order");
  EXPECT_STREQ(to_string(Rule::kDeadlock), "deadlock");
}

TEST(Validator, DeviceCount) {
  const Instance inst = two_by_two();
  const Schedule sch = lists(inst, {{"F0.0", "F0.1", "B0.0", "W0.0", "B0.1", "W0.1"}});
  expect_structural(inst, sch, Rule::kDeviceCount, {"1 device lists", "2 devices"});
}

TEST(Validator, UnknownStage) {
  const Instance inst = two_by_two();
  const Schedule sch = lists(inst, {{"F0.0", "F0.1", "B0.0", "W0.0", "B0.1", "W0.1"},
                                    {"F1.0", "B1.0", "W1.0", "F1.1", "B1.1", "W1.1", "F2.0"}});
  expect_structural(inst, sch, Rule::kUnknownStage,
                    {"device 1, position 6", "F2.0", "stage 2 does not exist", "2 stages"});
}

TEST(Validator, UnknownMicrobatch) {
  const Instance inst = two_by_two();
  const Schedule sch = lists(inst, {{"F0.0", "F0.1", "B0.0", "W0.0", "B0.1", "W0.1", "F0.2"},
                                    {"F1.0", "B1.0", "W1.0", "F1.1", "B1.1", "W1.1"}});
  expect_structural(inst, sch, Rule::kUnknownMicrobatch,
                    {"device 0, position 6", "F0.2", "microbatch 2 does not exist", "2 microbatches"});
}

TEST(Validator, WrongDevice) {
  const Instance inst = two_by_two();
  const Schedule sch = lists(inst, {{"F0.0", "F0.1", "B0.0", "W0.0", "B0.1", "W0.1", "W1.1"},
                                    {"F1.0", "B1.0", "W1.0", "F1.1", "B1.1"}});
  expect_structural(inst, sch, Rule::kWrongDevice,
                    {"device 0, position 6", "W1.1", "stage 1 is placed on device 1"});
}

TEST(Validator, NoWeightOps) {
  Instance inst = uniform_instance(1, 1, 1, 1, 1, 0, GiB, 0);
  inst.split_backward = false;
  const Schedule sch = lists(inst, {{"F0.0", "B0.0", "W0.0"}});
  expect_structural(inst, sch, Rule::kNoWeightOps,
                    {"device 0, position 2", "W0.0", "split_backward is false"});
  EXPECT_TRUE(check_structure(inst, lists(inst, {{"F0.0", "B0.0"}})).empty());
}

TEST(Validator, Duplicate) {
  const Instance inst = two_by_two();
  const Schedule sch = lists(inst, {{"F0.0", "F0.1", "B0.0", "W0.0", "B0.1", "W0.1", "B0.1"},
                                    {"F1.0", "B1.0", "W1.0", "F1.1", "B1.1", "W1.1"}});
  expect_structural(inst, sch, Rule::kDuplicate,
                    {"device 0, position 6", "B0.1 appears twice", "first at device 0, position 4"});
}

TEST(Validator, Missing) {
  const Instance inst = two_by_two();
  const Schedule sch = lists(inst, {{"F0.0", "F0.1", "B0.0", "W0.0", "B0.1", "W0.1"},
                                    {"F1.0", "B1.0", "W1.0", "F1.1", "W1.1"}});
  expect_structural(inst, sch, Rule::kMissing, {"B1.1 is missing", "expected on device 1"});
}

TEST(Validator, Fifo) {
  const Instance inst = two_by_two();
  const Schedule sch = lists(inst, {{"F0.0", "F0.1", "B0.0", "B0.1", "W0.1", "W0.0"},
                                    {"F1.0", "B1.0", "W1.0", "F1.1", "B1.1", "W1.1"}});
  expect_structural(inst, sch, Rule::kFifo, {"device 0, position 5", "W0.0 comes after W0.1", "increasing"});
}

TEST(Validator, BadLevel) {
  const Instance inst = offloadable();
  const Schedule sch = lists(inst, {{"F0.0@0.5", "F0.1", "R0.0", "B0.0", "W0.0", "B0.1", "W0.1"}});
  expect_structural(inst, sch, Rule::kBadLevel,
                    {"device 0, position 0", "F0.0@0.5", "0.5 is not an offload level", "levels: 0, 1"});
  Instance halves = inst;
  halves.offload_levels = {0, 0.5, 1};
  EXPECT_TRUE(check_structure(halves, sch).empty());
}

TEST(Validator, NotOffloadable) {
  const Instance inst = uniform_instance(1, 2, 1, 1, 1);
  const Schedule sch = lists(inst, {{"F0.0@1", "F0.1", "R0.0", "B0.0", "W0.0", "B0.1", "W0.1"}});
  expect_structural(inst, sch, Rule::kNotOffloadable,
                    {"device 0, position 0", "F0.0@1", "stage 0 cannot be offloaded"});
}

TEST(Validator, ReloadWithoutOffload) {
  const Instance inst = offloadable();
  const Schedule sch = lists(inst, {{"F0.0", "F0.1", "R0.0", "B0.0", "W0.0", "B0.1", "W0.1"}});
  expect_structural(inst, sch, Rule::kReloadWithoutOffload,
                    {"device 0, position 2", "R0.0", "F0.0 is not offloaded"});
}

TEST(Validator, OffloadWithoutReload) {
  const Instance inst = offloadable();
  const Schedule sch = lists(inst, {{"F0.0", "F0.1@1", "B0.0", "W0.0", "B0.1", "W0.1"}});
  expect_structural(inst, sch, Rule::kOffloadWithoutReload,
                    {"F0.1 offloads", "device 0, position 1", "R0.1 is missing"});
}

TEST(Validator, ReloadBeforeForward) {
  const Instance inst = offloadable();
  const Schedule sch = lists(inst, {{"R0.0", "F0.0@1", "F0.1", "B0.0", "W0.0", "B0.1", "W0.1"}});
  expect_structural(inst, sch, Rule::kReloadOrder,
                    {"device 0, position 0", "R0.0 must come after F0.0", "device 0, position 1"});
}

TEST(Validator, ReloadAfterBackward) {
  const Instance inst = offloadable();
  const Schedule sch = lists(inst, {{"F0.0@1", "F0.1", "B0.0", "R0.0", "W0.0", "B0.1", "W0.1"}});
  expect_structural(inst, sch, Rule::kReloadOrder,
                    {"device 0, position 3", "R0.0 must come before B0.0", "device 0, position 2"});
}

TEST(Validator, DeadlockFromACycle) {
  // d0 runs B0.0 before F0.1, d1 runs F1.1 before B1.0: B0.0 waits for B1.0, which waits (in
  // d1's list) behind F1.1, which waits for F0.1, which comes after B0.0 in d0's list.
  const Instance inst = two_by_two();
  const Schedule sch = lists(inst, {{"F0.0", "B0.0", "W0.0", "F0.1", "B0.1", "W0.1"},
                                    {"F1.0", "F1.1", "B1.0", "W1.0", "B1.1", "W1.1"}});
  EXPECT_TRUE(check_structure(inst, sch).empty());
  const Validation v = validate(inst, sch);
  expect_only(v.violations, Rule::kDeadlock, {"does not complete", "deadlock", "B0.0", "F1.1"});
  ASSERT_TRUE(v.sim.has_value());
  EXPECT_FALSE(v.sim->feasible);
}

TEST(Validator, DeadlockFromMemory) {
  // Room for one activation only (1.5 GiB, activations 1 GiB, no offload): F0.1 can never start.
  const Instance inst = uniform_instance(1, 2, 1, 1, 1, 0, GiB, GiB / 2, 1.5 * GiB);
  const Schedule sch = lists(inst, {{"F0.0", "F0.1", "B0.0", "W0.0", "B0.1", "W0.1"}});
  EXPECT_TRUE(check_structure(inst, sch).empty());
  const Validation v = validate(inst, sch);
  expect_only(v.violations, Rule::kDeadlock, {"deadlock", "F0.1", "memory"});
  ASSERT_TRUE(v.sim.has_value());
  EXPECT_FALSE(v.sim->feasible);
  // The same lists in 1F1B order fit.
  EXPECT_TRUE(validate(inst, lists(inst, {{"F0.0", "B0.0", "W0.0", "F0.1", "B0.1", "W0.1"}})).valid());
}

// Each violation also carries the device and list position its message names (for callers that
// point at the entry, such as the Python package), or -1 for rules about no single entry.
TEST(Validator, ViolationsCarryTheirPlace) {
  const Instance inst = two_by_two();
  auto only = [](const std::vector<Violation>& v) {
    EXPECT_EQ(v.size(), 1u);
    return v.empty() ? Violation{Rule::kDeviceCount, "", -2, -2} : v[0];
  };
  // FIFO: W0.0 after W0.1 at device 0, position 5.
  Violation fifo = only(check_structure(inst, lists(inst, {{"F0.0", "F0.1", "B0.0", "B0.1", "W0.1", "W0.0"},
                                                           {"F1.0", "B1.0", "W1.0", "F1.1", "B1.1", "W1.1"}})));
  EXPECT_EQ(fifo.rule, Rule::kFifo);
  EXPECT_EQ(fifo.device, 0);
  EXPECT_EQ(fifo.position, 5);
  // A duplicate on device 1, position 6.
  Violation dup = only(check_structure(inst, lists(inst, {{"F0.0", "F0.1", "B0.0", "W0.0", "B0.1", "W0.1"},
                                                          {"F1.0", "B1.0", "W1.0", "F1.1", "B1.1", "W1.1", "B1.1"}})));
  EXPECT_EQ(dup.rule, Rule::kDuplicate);
  EXPECT_EQ(dup.device, 1);
  EXPECT_EQ(dup.position, 6);
  // A missing op and a wrong device count are about no single entry.
  Violation missing = only(check_structure(inst, lists(inst, {{"F0.0", "F0.1", "B0.0", "W0.0", "B0.1", "W0.1"},
                                                              {"F1.0", "B1.0", "W1.0", "F1.1", "B1.1"}})));
  EXPECT_EQ(missing.rule, Rule::kMissing);
  EXPECT_EQ(missing.device, -1);
  EXPECT_EQ(missing.position, -1);
  Violation count = only(check_structure(inst, lists(inst, {{"F0.0"}})));
  EXPECT_EQ(count.rule, Rule::kDeviceCount);
  EXPECT_EQ(count.device, -1);
  // R after B: the R's place (device 0, position 3).
  const Instance off = offloadable();
  Violation reload = only(check_structure(off, lists(off, {{"F0.0@1", "F0.1", "B0.0", "R0.0", "W0.0", "B0.1", "W0.1"}})));
  EXPECT_EQ(reload.rule, Rule::kReloadOrder);
  EXPECT_EQ(reload.device, 0);
  EXPECT_EQ(reload.position, 3);
  // A memory deadlock points at the F that waits (F0.1 at position 1).
  const Instance tight = uniform_instance(1, 2, 1, 1, 1, 0, GiB, GiB / 2, 1.5 * GiB);
  Violation stuck = only(validate(tight, lists(tight, {{"F0.0", "F0.1", "B0.0", "W0.0", "B0.1", "W0.1"}})).violations);
  EXPECT_EQ(stuck.rule, Rule::kDeadlock);
  EXPECT_EQ(stuck.device, 0);
  EXPECT_EQ(stuck.position, 1);
}

// Issue 20 (fuzzing the cache import; tests/fuzz/corpus/cache_import/finding-allocation-bomb.jsonl):
// a schedule of one action on an instance of 100 stages x 1e6 microbatches made check_structure
// allocate a table of every op, 6.4 GB, before naming the first missing one. Above
// kStageMicrobatchesNamedOneByOne a schedule too short for the instance gets one violation with
// the counts, and no table.
TEST(Validator, AScheduleTooShortForAHugeInstanceIsNamedByItsCounts) {
  Instance inst = uniform_instance(10, 1'000'000, 1, 1, 1);
  const Schedule one = lists(inst, {{"F0.0"}, {}, {}, {}, {}, {}, {}, {}, {}, {}});
  expect_structural(inst, one, Rule::kMissing,
                    {"the schedule has 1 action, but the instance needs 30000000 compute ops",
                     "10 stages x 1000000 microbatches x F, B, W", "at least 29999999 are missing"});
  inst.split_backward = false;
  expect_only(check_structure(inst, one), Rule::kMissing, {"needs 20000000 compute ops", "x F, B)"});
  // Small instances still name each missing op (Validator.Missing, LimitCapsTheList).
}

TEST(Validator, LimitCapsTheList) {
  const Instance inst = two_by_two();
  const Schedule empty = lists(inst, std::vector<std::vector<std::string>>(2));
  EXPECT_EQ(check_structure(inst, empty).size(), 12u);  // every F, B and W of 2 stages x 2 microbatches
  EXPECT_EQ(check_structure(inst, empty, 5).size(), 5u);
  for (const auto& v : check_structure(inst, empty)) EXPECT_EQ(v.rule, Rule::kMissing) << v.message;
}

}  // namespace
}  // namespace optpipe
