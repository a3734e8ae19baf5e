// Schedule files (spec §5): shape errors name their place, informational fields are kept, and
// text and file round trips are lossless.

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "model/error.h"
#include "model/schedule_io.h"
#include "tests/test_util.h"

namespace optpipe {
namespace {

using nlohmann::json;

json base() {
  return json::parse(R"({"format": "optpipe-schedule/1", "instance": "tiny",
                         "devices": [["F0.0", "F0.1@0.5", "R0.1", "B0.0", "W0.0", "B0.1", "W0.1"],
                                     ["F1.0", "B1.0", "W1.0", "F1.1", "B1.1", "W1.1"]]})");
}

// The InputError message parse_schedule throws; fails the test when it accepts the document.
std::string error_of(const std::string& text) {
  try {
    parse_schedule(text);
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << "message is not one line: " << what;
    return what;
  }
  ADD_FAILURE() << "parse_schedule accepted:\n" << text;
  return "";
}

void expect_error(const json& doc, const std::string& path, std::initializer_list<std::string> words) {
  const std::string msg = error_of(doc.dump());
  EXPECT_EQ(msg.rfind(path + ": ", 0), 0u) << "expected \"" << path << ": ...\", got: " << msg;
  for (const auto& w : words) EXPECT_NE(msg.find(w), std::string::npos) << "\"" << w << "\" not in: " << msg;
}

TEST(ScheduleIo, ParsesLists) {
  const Schedule sch = parse_schedule(base().dump());
  EXPECT_EQ(sch.instance, "tiny");
  ASSERT_EQ(sch.num_devices(), 2);
  ASSERT_EQ(sch.devices[0].size(), 7u);
  ASSERT_EQ(sch.devices[1].size(), 6u);
  EXPECT_EQ(sch.devices[0][1], make_f(0, 1, 0.5));
  EXPECT_EQ(sch.devices[0][2], make_r(0, 1));
  EXPECT_EQ(sch.devices[1][5], make_w(1, 1));
  EXPECT_EQ(sch.num_actions(), 13u);
  EXPECT_TRUE(sch.has_offload());
  EXPECT_FALSE(sch.makespan.has_value());
  EXPECT_TRUE(sch.status.empty());
  EXPECT_TRUE(sch.peak_memory.empty());
}

TEST(ScheduleIo, WrongFormat) {
  json doc = base();
  doc["format"] = "optpipe-instance/1";
  expect_error(doc, "format", {"\"optpipe-schedule/1\"", "\"optpipe-instance/1\""});
  doc.erase("format");
  expect_error(doc, "format", {"missing"});
}

TEST(ScheduleIo, MissingInstance) {
  json doc = base();
  doc.erase("instance");
  expect_error(doc, "instance", {"missing"});
  doc["instance"] = 3;
  expect_error(doc, "instance", {"must be a string"});
}

TEST(ScheduleIo, DevicesShape) {
  json doc = base();
  doc["devices"] = "F0.0";
  expect_error(doc, "devices", {"must be an array", "string"});
  doc["devices"] = json::object();
  expect_error(doc, "devices", {"must be an array", "object"});
  doc = base();
  doc["devices"][1] = "F1.0";
  expect_error(doc, "devices[1]", {"must be an array"});
  doc = base();
  doc["devices"][1][2] = 5;
  expect_error(doc, "devices[1][2]", {"must be a string", "5"});
  doc.erase("devices");
  expect_error(doc, "devices", {"missing"});
}

TEST(ScheduleIo, BadActionNamesItsPlace) {
  json doc = base();
  doc["devices"][1][3] = "X1.1";
  expect_error(doc, "devices[1][3]", {"\"X1.1\" is not an action", "F, B, W or R"});
  doc = base();
  doc["devices"][0][0] = "F0.0@2";
  expect_error(doc, "devices[0][0]", {"\"F0.0@2\"", "[0, 1]"});
}

TEST(ScheduleIo, UnknownField) {
  json doc = base();
  doc["score"] = 1;
  expect_error(doc, "score", {"unknown field", "makespan", "solver"});
}

TEST(ScheduleIo, Status) {
  json doc = base();
  doc["status"] = "good";
  expect_error(doc, "status", {"\"optimal\"", "\"feasible\"", "\"infeasible\"", "\"good\""});
  doc["status"] = 1;
  expect_error(doc, "status", {"must be a string"});
  for (const char* s : {"optimal", "feasible", "infeasible"}) {
    doc["status"] = s;
    EXPECT_EQ(parse_schedule(doc.dump()).status, s);
  }
}

TEST(ScheduleIo, InformationalFieldsAreKept) {
  json doc = base();
  doc["makespan"] = 123.4;
  doc["bubble"] = 0.125;
  doc["peak_memory"] = json::array({"80GiB", 1e9});
  doc["status"] = "optimal";
  doc["bound"] = 120.5;
  doc["gap"] = 0.024;
  doc["solver"] = "heuristic 1F1B";
  const Schedule sch = parse_schedule(doc.dump());
  EXPECT_EQ(sch.makespan, 123.4);
  EXPECT_EQ(sch.bubble, 0.125);
  EXPECT_EQ(sch.peak_memory, (std::vector<double>{80.0 * 1073741824.0, 1e9}));
  EXPECT_EQ(sch.status, "optimal");
  EXPECT_EQ(sch.bound, 120.5);
  EXPECT_EQ(sch.gap, 0.024);
  EXPECT_EQ(sch.solver, "heuristic 1F1B");

  doc["makespan"] = "fast";
  expect_error(doc, "makespan", {"must be a number"});
  doc = base();
  doc["peak_memory"] = json::array({"lots"});
  expect_error(doc, "peak_memory[0]", {"not a byte size"});
  doc = base();
  doc["makespan"] = nullptr;  // null: not known
  EXPECT_FALSE(parse_schedule(doc.dump()).makespan.has_value());
}

TEST(ScheduleIo, InvalidJson) {
  const std::string msg = error_of("{\"format\": \"optpipe-schedule/1\",\n \"devices\": [[\"F0.0\",]]}");
  EXPECT_NE(msg.find("not valid JSON"), std::string::npos) << msg;
  EXPECT_NE(msg.find("line 2"), std::string::npos) << msg;
  const std::string dup = error_of(R"({"format": "optpipe-schedule/1", "instance": "a", "devices": [],
                                       "gap": 1, "gap": 2})");
  EXPECT_EQ(dup.rfind("gap: duplicate key", 0), 0u) << dup;
}

// Fuzzing (issue 20; tests/fuzz/corpus/schedule/finding-number-overflow.json): a number beyond
// the largest double escaped the reader as the JSON library's out_of_range (exit 3, "internal
// error"); it is bad input naming its field.
TEST(ScheduleIo, NumberBeyondTheLargestDoubleNamesItsField) {
  std::string msg = error_of(R"({"format": "optpipe-schedule/1", "instance": "a", "devices": [], "makespan": 1e3080})");
  EXPECT_EQ(msg.rfind("makespan: the number '1e3080' is out of range", 0), 0u) << msg;
  msg = error_of(R"({"format": "optpipe-schedule/1", "instance": "a", "devices": [], "peak_memory": [1, -9e999]})");
  EXPECT_EQ(msg.rfind("peak_memory[1]: ", 0), 0u) << msg;
  msg = error_of(R"({"format": "optpipe-schedule/1", "instance": "a", "devices": [["F0.0", 1e400]]})");
  EXPECT_EQ(msg.rfind("devices[0][1]: ", 0), 0u) << msg;
}

// Issue 20: nesting deeper than json_reader::kMaxNesting is refused while reading (100000 levels
// crashed the command in the JSON library's writer).
TEST(ScheduleIo, DeepNestingIsRefusedNamingWhere) {
  const std::string msg = error_of(R"({"format": "optpipe-schedule/1", "instance": "a", "devices": [)" +
                                   std::string(100000, '[') + std::string(100001, ']') + "}");
  EXPECT_EQ(msg.rfind("devices[0][0]", 0), 0u) << msg.substr(0, 200);
  EXPECT_NE(msg.find("nested deeper than 64"), std::string::npos) << msg.substr(0, 400);
}

void expect_same(const Schedule& a, const Schedule& b) {
  EXPECT_EQ(a.instance, b.instance);
  EXPECT_EQ(a.devices, b.devices);
  EXPECT_EQ(a.makespan, b.makespan);
  EXPECT_EQ(a.bubble, b.bubble);
  EXPECT_EQ(a.bound, b.bound);
  EXPECT_EQ(a.gap, b.gap);
  EXPECT_EQ(a.peak_memory, b.peak_memory);
  EXPECT_EQ(a.status, b.status);
  EXPECT_EQ(a.solver, b.solver);
}

Schedule full_schedule() {
  Schedule sch;
  sch.instance = "a \"quoted\" name";
  sch.devices = {
      {make_f(0, 0, 0.3), make_f(0, 1, 1.0 / 3), make_r(0, 0), make_b(0, 0), make_r(0, 1), make_b(0, 1)},
      {make_f(1, 0), make_b(1, 0), make_f(1, 1), make_b(1, 1)},
      {}};
  sch.makespan = 100.0 / 3;
  sch.bubble = 0.1;
  sch.bound = 30.25;
  sch.gap = 1e-4;
  sch.peak_memory = {1.5e9, 3.0 * 1073741824.0, 0.0};
  sch.status = "feasible";
  sch.solver = "test, with \"quotes\"";
  return sch;
}

TEST(ScheduleIo, TextRoundTrip) {
  const Schedule sch = full_schedule();
  const std::string text = schedule_to_text(sch);
  expect_same(sch, parse_schedule(text));
  // One device list per line.
  const std::string line0 =
      "    [\"F0.0@0.3\", \"F0.1@0.3333333333333333\", \"R0.0\", \"B0.0\", \"R0.1\", \"B0.1\"],\n";
  EXPECT_NE(text.find(line0), std::string::npos) << text;
  EXPECT_NE(text.find("    [\"F1.0\", \"B1.0\", \"F1.1\", \"B1.1\"],\n"), std::string::npos) << text;

  Schedule bare;
  bare.instance = "x";
  bare.devices = {{make_f(0, 0), make_b(0, 0)}};
  const std::string bare_text = schedule_to_text(bare);
  EXPECT_EQ(bare_text.find("makespan"), std::string::npos) << bare_text;
  EXPECT_EQ(bare_text.find("status"), std::string::npos) << bare_text;
  expect_same(bare, parse_schedule(bare_text));
}

// The document form (schedule_to_json) reads back to the schedule and is what the text says.
TEST(ScheduleIo, JsonRoundTrip) {
  const Schedule sch = full_schedule();
  const json doc = schedule_to_json(sch);
  expect_same(sch, schedule_from_json(doc));
  EXPECT_EQ(doc, json::parse(schedule_to_text(sch)));
  EXPECT_EQ(doc["devices"][0][1], "F0.1@0.3333333333333333");

  Schedule bare;
  bare.instance = "x";
  bare.devices = {{make_f(0, 0), make_b(0, 0)}};
  const json bare_doc = schedule_to_json(bare);
  EXPECT_FALSE(bare_doc.contains("makespan"));
  EXPECT_FALSE(bare_doc.contains("status"));
  EXPECT_EQ(bare_doc, json::parse(schedule_to_text(bare)));
  expect_same(bare, schedule_from_json(bare_doc));
}

TEST(ScheduleIo, SaveAndLoad) {
  const std::string path = test_support::temp_dir() + "schedule-io-test.json";
  const Schedule sch = full_schedule();
  save_schedule(sch, path);
  expect_same(sch, load_schedule(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));

  // Errors from a file are prefixed with its name.
  json doc = base();
  doc["devices"][0][4] = "W0";
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    const std::string text = doc.dump();
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  }
  try {
    load_schedule(path);
    ADD_FAILURE() << "load_schedule accepted a bad action";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(path + ": devices[0][4]: \"W0\" is not an action", 0), 0u)
        << e.what();
  }
  std::filesystem::remove(path);
  try {
    load_schedule(path);
    ADD_FAILURE() << "load_schedule of a missing file did not throw";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace optpipe
