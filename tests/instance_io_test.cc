// Instance files (spec §5): every kind of bad input gets its own one-line message naming the
// field path and the reason; defaults, byte strings, comm forms, the conformance and shipped
// instances, and a lossless round trip.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/error.h"
#include "model/instance_io.h"
#include "tests/test_paths.h"
#include "tests/test_util.h"

namespace optpipe {
namespace {

using nlohmann::json;
using test_support::GiB;

// A valid instance: 2 devices, 2 stages (one per device), split backward.
json base() {
  return json::parse(R"({
    "format": "optpipe-instance/1", "name": "base", "microbatches": 4, "comm": 0.1,
    "devices": [{"memory_limit": "80GiB", "static_memory": "30GiB"}, {"memory_limit": 8e10}],
    "stages": [
      {"device": 0, "forward": 1, "backward": 1.5, "weight": 0.5, "activation": "1GiB",
       "weight_activation": "512MiB", "offload": 0.2, "reload": 0.3},
      {"device": 1, "forward": 1, "backward": 1.5, "weight": 0.5, "activation": 1e9}
    ]})");
}

// The InputError message parse_instance throws for `text`; fails the test when none is thrown
// or when the message is not one line.
std::string error_of(const std::string& text) {
  try {
    parse_instance(text);
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << "message is not one line: " << what;
    EXPECT_FALSE(what.empty());
    return what;
  }
  ADD_FAILURE() << "parse_instance accepted:\n" << text;
  return "";
}
std::string error_of(const json& doc) { return error_of(doc.dump()); }
std::string error_of(const char* text) { return error_of(std::string(text)); }

// Expects the message to start with the field path and to contain every one of `words`.
void expect_error(const json& doc, const std::string& path, std::initializer_list<std::string> words) {
  const std::string msg = error_of(doc);
  EXPECT_EQ(msg.rfind(path + ": ", 0), 0u)
      << "expected the message to start with \"" << path << ": \", got: " << msg;
  for (const auto& w : words) EXPECT_NE(msg.find(w), std::string::npos) << "\"" << w << "\" not in: " << msg;
}

TEST(InstanceIo, BaseIsValid) {
  std::vector<std::string> warnings;
  const Instance inst = parse_instance(base().dump(), &warnings);
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(inst.name, "base");
  EXPECT_EQ(inst.microbatches, 4);
  ASSERT_EQ(inst.num_devices(), 2);
  ASSERT_EQ(inst.num_stages(), 2);
  EXPECT_DOUBLE_EQ(inst.devices[0].memory_limit, 80 * GiB);
  EXPECT_DOUBLE_EQ(inst.devices[0].static_memory, 30 * GiB);
  EXPECT_DOUBLE_EQ(inst.devices[1].memory_limit, 8e10);
  EXPECT_DOUBLE_EQ(inst.stages[0].backward, 1.5);
  EXPECT_DOUBLE_EQ(inst.stages[0].weight_activation, 0.5 * GiB);
  EXPECT_TRUE(inst.stages[0].offloadable());
  EXPECT_DOUBLE_EQ(*inst.stages[0].offload, 0.2);
  EXPECT_DOUBLE_EQ(*inst.stages[0].reload, 0.3);
  EXPECT_FALSE(inst.stages[1].offloadable());
  EXPECT_DOUBLE_EQ(inst.stages[1].activation, 1e9);
}

TEST(InstanceIo, MissingField) {
  json doc = base();
  doc["stages"][1].erase("forward");
  expect_error(doc, "stages[1].forward", {"missing"});

  doc = base();
  doc["stages"][0].erase("weight");  // required when split_backward is true (the default)
  expect_error(doc, "stages[0].weight", {"missing"});

  doc = base();
  doc["stages"][1].erase("activation");
  expect_error(doc, "stages[1].activation", {"missing"});

  doc = base();
  doc["stages"][0].erase("device");
  expect_error(doc, "stages[0].device", {"missing"});

  doc = base();
  doc["devices"][1].erase("memory_limit");
  expect_error(doc, "devices[1].memory_limit", {"missing"});

  for (const char* key : {"format", "microbatches", "devices", "stages"}) {
    doc = base();
    doc.erase(key);
    expect_error(doc, key, {"missing"});
  }
}

TEST(InstanceIo, WeightOptionalWhenUnsplit) {
  json doc = base();
  doc["split_backward"] = false;
  doc["stages"][0].erase("weight");
  doc["stages"][0].erase("weight_activation");
  const Instance inst = parse_instance(doc.dump());
  EXPECT_FALSE(inst.split_backward);
  EXPECT_DOUBLE_EQ(inst.stages[0].weight, 0.0);
  EXPECT_DOUBLE_EQ(inst.stages[1].weight, 0.5);  // given: kept, the fused B lasts backward + weight
  EXPECT_DOUBLE_EQ(inst.duration(OpType::B, 1), 2.0);
}

TEST(InstanceIo, WrongType) {
  json doc = base();
  doc["stages"][0]["forward"] = "1.0";
  expect_error(doc, "stages[0].forward", {"must be a number", "string", "\"1.0\""});

  doc = base();
  doc["split_backward"] = 1;
  expect_error(doc, "split_backward", {"true or false", "1"});

  doc = base();
  doc["devices"] = json::object();
  expect_error(doc, "devices", {"must be an array", "object"});

  doc = base();
  doc["stages"] = json{{"device", 0}};
  expect_error(doc, "stages", {"must be an array", "object"});

  doc = base();
  doc["stages"][1] = 5;
  expect_error(doc, "stages[1]", {"must be an object", "5"});

  doc = base();
  doc["devices"][0]["memory_limit"] = true;
  expect_error(doc, "devices[0].memory_limit", {"byte size", "true"});

  doc = base();
  doc["name"] = 7;
  expect_error(doc, "name", {"must be a string", "7"});

  doc = base();
  doc["devices"][1]["pcie_group"] = "0";
  expect_error(doc, "devices[1].pcie_group", {"integer"});

  EXPECT_EQ(error_of("[1, 2]"), "top level: must be an object, got an array");
}

TEST(InstanceIo, NegativeTime) {
  json doc = base();
  doc["stages"][1]["backward"] = -1;
  expect_error(doc, "stages[1].backward", {">= 0", "-1"});

  doc = base();
  doc["stages"][0]["offload"] = -0.5;
  expect_error(doc, "stages[0].offload", {">= 0", "-0.5"});

  doc = base();
  doc["comm"] = -0.1;
  expect_error(doc, "comm", {">= 0", "-0.1"});
}

// Issue 23: a forward of 1e308 ms was accepted, and every makespan became inf, every bubble NaN.
TEST(InstanceIo, AbsurdValuesAreRefusedWithTheirPath) {
  json doc = base();
  doc["stages"][1]["forward"] = 1e308;
  expect_error(doc, "stages[1].forward", {"at most 1e9 ms"});
  doc = base();
  doc["comm"] = 2e9;
  expect_error(doc, "comm", {"at most 1e9 ms"});
  doc = base();
  doc["stages"][0]["activation"] = 1e300;
  expect_error(doc, "stages[0].activation", {"at most 1e21 bytes"});
  doc = base();
  doc["devices"][0]["memory_limit"] = "1e30GiB";
  expect_error(doc, "devices[0].memory_limit", {"at most 1e21 bytes"});
  doc = base();
  doc["stages"][1]["forward"] = 1e9;  // the cap itself is allowed
  EXPECT_NO_THROW(parse_instance(doc.dump()));
}

// Fuzzing (issue 20; tests/fuzz/corpus/*/finding-number-overflow*): a number literal beyond the
// largest double made the JSON library throw out_of_range past the reader, and `optpipe validate`
// exited 3 with "internal error". It is bad input, named by its field path.
TEST(InstanceIo, NumberBeyondTheLargestDoubleNamesItsField) {
  std::string text = base().dump();
  text.replace(text.find("\"forward\":1"), 11, "\"forward\":1e400");
  std::string msg = error_of(text);
  EXPECT_EQ(msg.rfind("stages[0].forward: ", 0), 0u) << msg;
  EXPECT_NE(msg.find("'1e400' is out of range"), std::string::npos) << msg;

  msg = error_of(R"({"format": "optpipe-instance/1", "microbatches": -2e308, "devices": [], "stages": []})");
  EXPECT_EQ(msg.rfind("microbatches: ", 0), 0u) << msg;
  msg = error_of(R"({"format": "optpipe-instance/1", "offload_levels": [0, 1, 1e99999], "devices": []})");
  EXPECT_EQ(msg.rfind("offload_levels[2]: ", 0), 0u) << msg;
  msg = error_of("1e400");
  EXPECT_EQ(msg.rfind("top level: ", 0), 0u) << msg;
  // A literal of many digits is cut in the message.
  msg = error_of("[" + std::string(5000, '9') + "e999]");
  EXPECT_EQ(msg.rfind("[0]: ", 0), 0u) << msg;
  EXPECT_LT(msg.size(), 200u) << msg;
}

// Issue 20: 100000 nested arrays crashed the command (a stack overflow in the JSON library's
// writer, which the "got an array" message calls). Nesting deeper than json_reader::kMaxNesting
// is refused while reading, naming where; 64 levels still read.
TEST(InstanceIo, DeepNestingIsRefusedNamingWhere) {
  const auto nested = [](int n) { return std::string(n, '[') + std::string(n, ']'); };
  std::string msg = error_of(R"({"format": "optpipe-instance/1", "name": )" + nested(100000) + "}");
  EXPECT_EQ(msg.rfind("name[0][0][0]", 0), 0u) << msg.substr(0, 200);
  EXPECT_NE(msg.find(": nested deeper than 64 arrays and objects"), std::string::npos) << msg.substr(0, 400);
  msg = error_of(nested(1000000));
  EXPECT_EQ(msg.rfind("[0][0]", 0), 0u) << msg.substr(0, 200);
  EXPECT_NE(msg.find("nested deeper than 64"), std::string::npos) << msg.substr(0, 400);
  msg = error_of(R"({"format": "optpipe-instance/1", "name": )" + nested(63) + "}");  // 64 levels with the document
  EXPECT_EQ(msg.rfind("name: must be a string, got an array", 0), 0u) << msg;
}

TEST(InstanceIo, WeightActivationAboveActivation) {
  json doc = base();
  doc["stages"][0]["weight_activation"] = "2GiB";
  expect_error(doc, "stages[0].weight_activation", {"<= activation", "2GiB", "1GiB"});

  doc = base();
  doc["stages"][1]["weight_activation"] = 1e9;  // equal is allowed
  EXPECT_DOUBLE_EQ(parse_instance(doc.dump()).stages[1].weight_activation, 1e9);
}

TEST(InstanceIo, StageOnMissingDevice) {
  json doc = base();
  doc["stages"][1]["device"] = 2;
  expect_error(doc, "stages[1].device", {"device 2 does not exist", "2 devices"});

  doc = base();
  doc["stages"][0]["device"] = -1;
  expect_error(doc, "stages[0].device", {"does not exist"});

  doc = base();
  doc["stages"][0]["device"] = 0.5;
  expect_error(doc, "stages[0].device", {"integer", "0.5"});
}

TEST(InstanceIo, UnknownField) {
  json doc = base();
  doc["colour"] = "red";
  expect_error(doc, "colour", {"unknown field", "microbatches"});

  doc = base();
  doc["devices"][1]["memory"] = 1;
  expect_error(doc, "devices[1].memory", {"unknown field", "memory_limit", "pcie_group"});

  doc = base();
  doc["stages"][0]["fwd"] = 1;
  expect_error(doc, "stages[0].fwd", {"unknown field", "forward", "weight_activation"});
}

TEST(InstanceIo, WrongFormat) {
  json doc = base();
  doc["format"] = "optpipe-instance/2";
  expect_error(doc, "format", {"\"optpipe-instance/1\"", "\"optpipe-instance/2\""});

  doc = base();
  doc["format"] = "optpipe-schedule/1";
  expect_error(doc, "format", {"optpipe-instance/1", "optpipe-schedule/1", "is a schedule, not an instance", "swapped"});

  doc = base();
  doc["format"] = 1;
  expect_error(doc, "format", {"must be a string"});
}

TEST(InstanceIo, Microbatches) {
  json doc = base();
  doc["microbatches"] = 0;
  expect_error(doc, "microbatches", {"from 1 to 1000000", "0"});

  doc["microbatches"] = 1.5;
  expect_error(doc, "microbatches", {"integer", "1.5"});

  doc["microbatches"] = -3;
  expect_error(doc, "microbatches", {"from 1 to 1000000", "-3"});

  doc["microbatches"] = 1e12;  // issue 23: said "must be an integer >= 1" of an integer >= 1
  expect_error(doc, "microbatches", {"from 1 to 1000000"});

  doc["microbatches"] = "4";
  expect_error(doc, "microbatches", {"integer", "string"});

  doc["microbatches"] = 2.0;  // integral: accepted
  EXPECT_EQ(parse_instance(doc.dump()).microbatches, 2);
}

// Issue 20: a few KB of file (1000 stages, 1e6 microbatches) describe 3e9 ops, which every tool
// would hold in memory; the reader refuses more than kMaxStageMicrobatches stage-microbatches
// (docs/semantics.md) and accepts the cap itself.
TEST(InstanceIo, MoreStageMicrobatchesThanTheCapAreRefused) {
  json doc = base();
  json stage = doc["stages"][1];
  doc["stages"] = json::array();
  for (int s = 0; s < 10; ++s) {
    stage["device"] = s % 2;
    doc["stages"].push_back(stage);
  }
  doc["comm"] = 0;
  doc["microbatches"] = 1'000'000;  // 10 x 1e6 = 1e7: the cap itself
  EXPECT_EQ(parse_instance(doc.dump()).microbatches, 1'000'000);
  doc["stages"].push_back(stage);  // 11 x 1e6
  expect_error(doc, "microbatches", {"1000000 microbatches x 11 stages", "more than 10000000 stage-microbatches",
                                     "33000000 actions"});
}

TEST(InstanceIo, MemoryLimitMustBePositive) {
  json doc = base();
  doc["devices"][1]["memory_limit"] = 0;
  expect_error(doc, "devices[1].memory_limit", {"> 0"});

  doc["devices"][1]["memory_limit"] = "0GiB";
  expect_error(doc, "devices[1].memory_limit", {"> 0"});
}

TEST(InstanceIo, OffloadNeedsReload) {
  json doc = base();
  doc["stages"][0].erase("reload");
  expect_error(doc, "stages[0].reload", {"missing", "both offload and reload", "offload is given"});

  doc = base();
  doc["stages"][0].erase("offload");
  expect_error(doc, "stages[0].offload", {"missing", "both offload and reload", "reload is given"});

  doc = base();
  doc["stages"][0]["reload"] = nullptr;  // null is the same as absent
  expect_error(doc, "stages[0].reload", {"missing"});

  doc = base();
  doc["stages"][0]["offload"] = nullptr;
  doc["stages"][0]["reload"] = nullptr;
  EXPECT_FALSE(parse_instance(doc.dump()).stages[0].offloadable());
}

TEST(InstanceIo, CommListLength) {
  json doc = base();
  doc["comm"] = json::array({0.1, 0.2});  // 2 stages: one pair
  expect_error(doc, "comm", {"one entry per pair of adjacent stages", "(1)", "got 2"});

  doc["comm"] = json::array();
  expect_error(doc, "comm", {"(1)", "got 0"});

  doc["comm"] = json::array({-1});
  expect_error(doc, "comm[0]", {">= 0", "-1"});

  doc["comm"] = json::array({"0.1"});
  expect_error(doc, "comm[0]", {"must be a number"});

  doc["comm"] = "0.1";
  expect_error(doc, "comm", {"a number or a list", "string"});
}

TEST(InstanceIo, OffloadLevels) {
  json doc = base();
  doc["offload_levels"] = json::array({0.5, 1});
  expect_error(doc, "offload_levels", {"must contain 0"});

  doc["offload_levels"] = json::array({0, 1.5});
  expect_error(doc, "offload_levels[1]", {"[0, 1]", "1.5"});

  doc["offload_levels"] = json::array({0, -0.5});
  expect_error(doc, "offload_levels[1]", {"[0, 1]", "-0.5"});

  doc["offload_levels"] = json::array({0, 1, 1});
  expect_error(doc, "offload_levels[2]", {"duplicate", "1"});

  doc["offload_levels"] = json::array({0, "1"});
  expect_error(doc, "offload_levels[1]", {"must be a number"});

  doc["offload_levels"] = 1;
  expect_error(doc, "offload_levels", {"must be an array"});

  doc["offload_levels"] = json::array({1, 0, 0.25});  // any order; stored sorted
  EXPECT_EQ(parse_instance(doc.dump()).offload_levels, (std::vector<double>{0, 0.25, 1}));

  doc["offload_levels"] = json::array({0});
  EXPECT_EQ(parse_instance(doc.dump()).offload_levels, (std::vector<double>{0}));
}

TEST(InstanceIo, EveryDeviceHoldsAStage) {
  json doc = base();
  doc["devices"].push_back(json{{"memory_limit", "80GiB"}});
  expect_error(doc, "devices[2]", {"holds no stage"});

  doc = base();
  doc["devices"] = json::array();
  expect_error(doc, "devices", {"at least one device"});

  doc = base();
  doc["stages"] = json::array();
  expect_error(doc, "stages", {"at least one stage"});
}

TEST(InstanceIo, InvalidJson) {
  const std::string msg = error_of("{\n  \"format\": \"optpipe-instance/1\",\n  \"microbatches\": ,\n}");
  EXPECT_NE(msg.find("not valid JSON"), std::string::npos) << msg;
  EXPECT_NE(msg.find("line 3"), std::string::npos) << msg;

  const std::string truncated = error_of("{\"format\": \"optpipe-instance/1\"");
  EXPECT_NE(truncated.find("line"), std::string::npos) << truncated;

  EXPECT_NE(error_of("").find("not valid JSON"), std::string::npos);
}

TEST(InstanceIo, DuplicateKey) {
  const std::string top =
      error_of(R"({"format": "optpipe-instance/1", "name": "a", "name": "b", "microbatches": 1,
                   "devices": [{"memory_limit": 1}], "stages": [{"device": 0, "forward": 1, "backward": 1,
                   "weight": 1, "activation": 1}]})");
  EXPECT_EQ(top.rfind("name: ", 0), 0u) << top;
  EXPECT_NE(top.find("duplicate key"), std::string::npos) << top;

  // Nested: the message names the field path of the repeated key.
  const std::string nested =
      error_of(R"({"format": "optpipe-instance/1", "microbatches": 1, "devices": [{"memory_limit": 1},
                   {"memory_limit": 1}], "stages": [{"device": 0, "forward": 1, "backward": 1, "weight": 1,
                   "activation": 1}, {"device": 1, "forward": 1, "backward": 1, "weight": 1, "forward": 2,
                   "activation": 1}]})");
  EXPECT_EQ(nested.rfind("stages[1].forward: ", 0), 0u) << nested;
  EXPECT_NE(nested.find("duplicate key"), std::string::npos) << nested;

  // The same key in two different objects is fine.
  EXPECT_NO_THROW(parse_instance(base().dump()));
}

TEST(InstanceIo, BadByteString) {
  json doc = base();
  doc["devices"][0]["memory_limit"] = "80 GiBs";
  expect_error(doc, "devices[0].memory_limit", {"\"80 GiBs\"", "not a byte size", "80GiB"});

  doc = base();
  doc["devices"][0]["static_memory"] = "-1GiB";
  expect_error(doc, "devices[0].static_memory", {">= 0", "-1GiB"});

  doc = base();
  doc["stages"][1]["activation"] = "lots";
  expect_error(doc, "stages[1].activation", {"\"lots\"", "not a byte size"});

  doc = base();
  doc["stages"][1]["activation"] = "80gibs";
  expect_error(doc, "stages[1].activation", {"not a byte size"});

  doc = base();
  doc["stages"][1]["activation"] = "2gib";  // units in any case (issue 23)
  EXPECT_DOUBLE_EQ(parse_instance(doc.dump()).stages[1].activation, 2.0 * 1073741824.0);

  doc = base();
  doc["stages"][1]["activation"] = -5;
  expect_error(doc, "stages[1].activation", {">= 0", "-5"});
}

TEST(InstanceIo, ByteStringsParse) {
  json doc = base();
  doc["devices"][0]["memory_limit"] = "80GiB";
  doc["devices"][0]["static_memory"] = "512 MiB";
  doc["devices"][1]["memory_limit"] = "1.5GB";
  doc["stages"][0]["activation"] = 1e9;
  doc["stages"][0]["weight_activation"] = "1KiB";
  const Instance inst = parse_instance(doc.dump());
  EXPECT_DOUBLE_EQ(inst.devices[0].memory_limit, 80.0 * 1073741824.0);
  EXPECT_DOUBLE_EQ(inst.devices[0].static_memory, 512.0 * 1048576.0);
  EXPECT_DOUBLE_EQ(inst.devices[1].memory_limit, 1.5e9);
  EXPECT_DOUBLE_EQ(inst.stages[0].activation, 1e9);
  EXPECT_DOUBLE_EQ(inst.stages[0].weight_activation, 1024.0);
}

TEST(InstanceIo, LoadMissingFileNamesTheFile) {
  const std::string path = test_support::temp_dir() + "no-such-instance.json";
  std::filesystem::remove(path);
  try {
    load_instance(path);
    FAIL() << "load_instance of a missing file did not throw";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find("no such file"), std::string::npos) << msg;
  }
}

TEST(InstanceIo, LoadErrorNamesFileAndField) {
  const std::string path = test_support::temp_dir() + "bad-instance.json";
  json doc = base();
  doc["stages"][1]["forward"] = -2;
  {
    std::ofstream out(path);
    out << doc.dump(1);
  }
  try {
    load_instance(path);
    FAIL() << "load_instance accepted a negative forward";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(path + ": stages[1].forward: ", 0), 0u) << e.what();
  }
  std::filesystem::remove(path);
}

TEST(InstanceIo, WarnsAboutWeightActivationWhenUnsplit) {
  json doc = base();
  doc["split_backward"] = false;
  std::vector<std::string> warnings;
  const Instance inst = parse_instance(doc.dump(), &warnings);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].rfind("stages[0].weight_activation: ", 0), 0u) << warnings[0];
  EXPECT_NE(warnings[0].find("split_backward is false"), std::string::npos) << warnings[0];
  EXPECT_DOUBLE_EQ(inst.stages[0].weight_activation, 0.0);  // the spec fixes M_W at 0 when unsplit
  EXPECT_DOUBLE_EQ(inst.freed_by_b(0), inst.stages[0].activation);

  // No warning when split, or when the unsplit value is 0.
  warnings.clear();
  parse_instance(base().dump(), &warnings);
  EXPECT_TRUE(warnings.empty());
  doc["stages"][0]["weight_activation"] = 0;
  parse_instance(doc.dump(), &warnings);
  EXPECT_TRUE(warnings.empty());
  EXPECT_NO_THROW(parse_instance(doc.dump(), nullptr));
}

TEST(InstanceIo, Defaults) {
  const Instance inst = parse_instance(R"({"format": "optpipe-instance/1", "microbatches": 2,
      "devices": [{"memory_limit": 100}, {"memory_limit": 100}, {"memory_limit": 100}],
      "stages": [{"device": 0, "forward": 1, "backward": 2, "weight": 3, "activation": 10},
                 {"device": 1, "forward": 1, "backward": 2, "weight": 3, "activation": 10},
                 {"device": 2, "forward": 1, "backward": 2, "weight": 3, "activation": 10}]})");
  EXPECT_EQ(inst.name, "");
  EXPECT_TRUE(inst.split_backward);
  EXPECT_EQ(inst.offload_levels, (std::vector<double>{0, 1}));
  EXPECT_EQ(inst.comm, (std::vector<double>{0, 0}));
  for (int d = 0; d < 3; ++d) {
    EXPECT_DOUBLE_EQ(inst.devices[d].static_memory, 0.0);
    EXPECT_EQ(inst.devices[d].pcie_group, d);
  }
  for (const Stage& st : inst.stages) {
    EXPECT_DOUBLE_EQ(st.weight_activation, 0.0);
    EXPECT_FALSE(st.offloadable());
  }

  json doc = base();
  doc["split_backward"] = false;
  doc["stages"][0].erase("weight_activation");
  doc["devices"][1]["pcie_group"] = 0;
  const Instance unsplit = parse_instance(doc.dump());
  EXPECT_FALSE(unsplit.split_backward);
  EXPECT_DOUBLE_EQ(unsplit.stages[0].weight_activation, 0.0);
  EXPECT_DOUBLE_EQ(unsplit.freed_by_w(0), 0.0);
  EXPECT_EQ(unsplit.devices[0].pcie_group, 0);
  EXPECT_EQ(unsplit.devices[1].pcie_group, 0);
}

TEST(InstanceIo, CommNumberOrList) {
  // Stages 0 and 1 on device 0, stage 2 on device 1: comm applies only between 1 and 2.
  json doc = base();
  doc["stages"] = json::array();
  for (int dev : {0, 0, 1}) {
    doc["stages"].push_back(
        json{{"device", dev}, {"forward", 1}, {"backward", 1}, {"weight", 1}, {"activation", 1}});
  }
  doc["comm"] = 0.25;
  const Instance number = parse_instance(doc.dump());
  EXPECT_EQ(number.comm, (std::vector<double>{0.25, 0.25}));
  EXPECT_DOUBLE_EQ(number.comm_after(0), 0.0);  // same device
  EXPECT_DOUBLE_EQ(number.comm_after(1), 0.25);

  doc["comm"] = json::array({0.5, 0.75});
  const Instance list = parse_instance(doc.dump());
  EXPECT_EQ(list.comm, (std::vector<double>{0.5, 0.75}));
  EXPECT_DOUBLE_EQ(list.comm_after(0), 0.0);
  EXPECT_DOUBLE_EQ(list.comm_after(1), 0.75);

  doc["comm"] = json::array({0.5});
  expect_error(doc, "comm", {"(2)", "got 1"});
}

TEST(InstanceIo, ConformanceInstancesLoad) {
  const std::filesystem::path dir = OPTPIPE_CONFORMANCE_DIR;
  if (!std::filesystem::is_directory(dir)) {
    GTEST_SKIP() << "conformance data not found at " << dir << " (it lives in ../shared/conformance)";
  }
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("c-", 0) != 0 || entry.path().extension() != ".json") continue;
    ++count;
    std::vector<std::string> warnings;
    try {
      const Instance inst = load_instance(entry.path().string(), &warnings);
      EXPECT_EQ(inst.name + ".json", name);
      EXPECT_GE(inst.num_stages(), inst.num_devices());
    } catch (const InputError& e) {
      ADD_FAILURE() << e.what();
    }
    EXPECT_TRUE(warnings.empty()) << name << ": " << (warnings.empty() ? "" : warnings[0]);
  }
  if (count == 0) GTEST_SKIP() << "no c-*.json instance in " << dir;
}

TEST(InstanceIo, ShippedInstancesLoadWithoutWarnings) {
  const std::filesystem::path dir = std::filesystem::path(OPTPIPE_SOURCE_DIR) / "instances";
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    ++count;
    std::vector<std::string> warnings;
    try {
      const Instance inst = load_instance(entry.path().string(), &warnings);
      EXPECT_EQ(inst.name + ".json", entry.path().filename().string());
    } catch (const InputError& e) {
      ADD_FAILURE() << e.what();
    }
    for (const auto& w : warnings) ADD_FAILURE() << entry.path() << ": warning: " << w;
  }
  EXPECT_GE(count, 5);
}

void expect_same(const Instance& a, const Instance& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.microbatches, b.microbatches);
  EXPECT_EQ(a.split_backward, b.split_backward);
  EXPECT_EQ(a.offload_levels, b.offload_levels);
  EXPECT_EQ(a.comm, b.comm);
  ASSERT_EQ(a.num_devices(), b.num_devices());
  for (int d = 0; d < a.num_devices(); ++d) {
    EXPECT_EQ(a.devices[d].memory_limit, b.devices[d].memory_limit) << "device " << d;
    EXPECT_EQ(a.devices[d].static_memory, b.devices[d].static_memory) << "device " << d;
    EXPECT_EQ(a.devices[d].pcie_group, b.devices[d].pcie_group) << "device " << d;
  }
  ASSERT_EQ(a.num_stages(), b.num_stages());
  for (int s = 0; s < a.num_stages(); ++s) {
    const Stage& x = a.stages[s];
    const Stage& y = b.stages[s];
    EXPECT_EQ(x.device, y.device) << "stage " << s;
    EXPECT_EQ(x.forward, y.forward) << "stage " << s;
    EXPECT_EQ(x.backward, y.backward) << "stage " << s;
    EXPECT_EQ(x.weight, y.weight) << "stage " << s;
    EXPECT_EQ(x.activation, y.activation) << "stage " << s;
    EXPECT_EQ(x.weight_activation, y.weight_activation) << "stage " << s;
    EXPECT_EQ(x.offload, y.offload) << "stage " << s;
    EXPECT_EQ(x.reload, y.reload) << "stage " << s;
  }
}

TEST(InstanceIo, RoundTrip) {
  Instance inst;
  inst.name = "round \"trip\"";
  inst.microbatches = 7;
  inst.split_backward = true;
  inst.offload_levels = {0.0, 0.3, 0.75, 1.0};
  inst.devices = {{80 * GiB, 30.5 * GiB, 0}, {1e10 / 3, 0.0, 0}, {79.9e9, 1234.5, 5}};
  const int placement[] = {0, 1, 2, 2, 1, 0};
  for (int s = 0; s < 6; ++s) {
    Stage st;
    st.device = placement[s];
    st.forward = 1.1 + s / 7.0;
    st.backward = 2.2 + s * 0.01;
    st.weight = 0.1 * s;
    st.activation = 1.4 * GiB + s;
    st.weight_activation = st.activation / 3;
    if (s % 2 == 0) {
      st.offload = 0.16 + s;
      st.reload = 0.17 / (s + 1);
    }
    inst.stages.push_back(st);
  }
  inst.comm = {0.1, 0.2, 0.0, 1.0 / 3, 0.05};

  std::vector<std::string> warnings;
  expect_same(inst, instance_from_json(instance_to_json(inst), &warnings));
  EXPECT_TRUE(warnings.empty());
  // Through text, too (doubles must print exactly), and through a file.
  expect_same(inst, parse_instance(instance_to_json(inst).dump()));
  const std::string path = test_support::temp_dir() + "round-trip.json";
  save_instance(inst, path);
  expect_same(inst, load_instance(path));
  std::filesystem::remove(path);

  // Uniform comm, unsplit and a single stage round-trip too.
  inst.comm.assign(5, 0.07);
  expect_same(inst, parse_instance(instance_to_json(inst).dump()));
  Instance unsplit = test_support::uniform_instance(1, 3, 1, 2, 3, 0.0, GiB, 0.0);
  unsplit.split_backward = false;
  expect_same(unsplit, parse_instance(instance_to_json(unsplit).dump()));
}

}  // namespace
}  // namespace optpipe
