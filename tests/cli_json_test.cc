// `--format json` of schedule, simulate, validate, generate and cache list (docs/json.md): each
// run's standard output must parse as exactly one JSON document (nlohmann's parse refuses
// anything after it), its fields must equal what the libraries compute for the same input
// (simulate(), validate(), the heuristics, the generator, the cache), and the negative answers
// (deadlock, broken lists, nothing fits) and bad input keep their exit codes with a document
// that says so. Warnings go to standard error and leave standard output alone.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cache/schedule_cache.h"
#include "heuristics/registry.h"
#include "instances/generator/generate.h"
#include "instances/generator/generate_request.h"
#include "model/instance_io.h"
#include "model/schedule_io.h"
#include "model/simulator.h"
#include "model/validator.h"
#include "tests/test_paths.h"
#include "tests/test_util.h"

namespace optpipe {
namespace {

using nlohmann::json;
namespace ts = test_support;

struct JsonRun {
  int status = -1;
  std::string out, err;  // standard output and standard error, apart
  json doc;              // `out` parsed; discarded when it is not exactly one document
  bool parsed = false;
};

// Runs `optpipe ARGS` (ARGS already quoted) and parses its standard output.
JsonRun run_json(const std::string& args) {
  static int n = 0;
  const std::string err = ts::temp_file("json-stderr", std::to_string(n++) + ".txt");
  // In a subshell: run_shell sends the group's stderr to its output, the command's goes to `err`.
  const ts::ShellRun r = ts::run_shell("(" + ts::shell_quote(ts::kCliPath) + " " + args + " 2>" + ts::shell_quote(err) + ")");
  JsonRun j{r.status, r.output, ts::read_text(err), json(), false};
  j.doc = json::parse(j.out, nullptr, false);
  j.parsed = !j.doc.is_discarded();
  return j;
}

std::string q(const std::string& s) { return ts::shell_quote(s); }
std::string shipped(const std::string& name) { return std::string(OPTPIPE_SOURCE_DIR) + "/instances/" + name + ".json"; }

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = ts::temp_file("json", name);
  std::ofstream(path) << text;
  return path;
}

#define ASSERT_ONE_DOCUMENT(run) ASSERT_TRUE((run).parsed) << "stdout is not one JSON document:\n" << (run).out << (run).err

// A heuristic's schedule of `instance` written with the library, for the commands to read.
std::string heuristic_schedule_file(const Instance& inst, const std::string& heuristic, const std::string& name) {
  const HeuristicResult r = run_heuristic(*find_heuristic(heuristic), inst);
  EXPECT_TRUE(r.ok()) << r.reason;
  const std::string path = ts::temp_file("json", name);
  save_schedule(*r.schedule, path);
  return path;
}

void expect_simulation(const json& j, const Instance& inst, const SimResult& sim) {
  ASSERT_TRUE(j.is_object()) << j;
  EXPECT_EQ(j["feasible"], sim.feasible);
  EXPECT_DOUBLE_EQ(j["makespan"].get<double>(), sim.makespan);
  EXPECT_DOUBLE_EQ(j["bubble"].get<double>(), sim.bubble);
  ASSERT_EQ(j["devices"].size(), static_cast<std::size_t>(inst.num_devices()));
  for (int d = 0; d < inst.num_devices(); ++d) {
    const json& dev = j["devices"][d];
    EXPECT_EQ(dev["device"], d);
    EXPECT_DOUBLE_EQ(dev["busy"].get<double>(), sim.busy[d]);
    EXPECT_DOUBLE_EQ(dev["idle"].get<double>(), sim.makespan - sim.busy[d]);
    EXPECT_DOUBLE_EQ(dev["peak_memory"].get<double>(), sim.peak_memory[d]);  // bytes, a number
    EXPECT_DOUBLE_EQ(dev["memory_limit"].get<double>(), inst.devices[d].memory_limit);
  }
}

TEST(CliJson, SimulateMatchesTheSimulator) {
  OPTPIPE_REQUIRE_CLI();
  const std::string ipath = shipped("offload-fast-pcie-4x8");
  const Instance inst = load_instance(ipath);
  const std::string spath = heuristic_schedule_file(inst, "pipe-offload", "pipe-offload.json");
  const Schedule sch = load_schedule(spath);
  const SimResult sim = simulate(inst, sch);
  ASSERT_TRUE(sim.feasible);
  ASSERT_FALSE(sim.transfers.empty());
  const JsonRun r = run_json("simulate --format json --timeline " + q(ipath) + " " + q(spath));
  EXPECT_EQ(r.status, 0) << r.err;
  ASSERT_ONE_DOCUMENT(r);
  EXPECT_EQ(r.doc["format"], "optpipe-simulate-report/1");
  EXPECT_EQ(r.doc["instance"], inst.name);
  EXPECT_EQ(r.doc["schedule"], spath);
  EXPECT_EQ(r.doc["valid"], true);
  EXPECT_TRUE(r.doc["violations"].empty());
  expect_simulation(r.doc["simulation"], inst, sim);
  const json& tl = r.doc["simulation"]["timeline"];
  ASSERT_EQ(tl["actions"].size(), sch.num_actions());
  for (const json& a : tl["actions"]) {
    const int d = a["device"], k = a["position"];
    EXPECT_EQ(a["action"], to_string(sch.devices[d][k]));
    EXPECT_DOUBLE_EQ(a["start"].get<double>(), sim.timeline[d][k].start);
    EXPECT_DOUBLE_EQ(a["end"].get<double>(), sim.timeline[d][k].end);
  }
  ASSERT_EQ(tl["transfers"].size(), sim.transfers.size());
  for (std::size_t i = 0; i < sim.transfers.size(); ++i) {
    const Transfer& t = sim.transfers[i];
    EXPECT_EQ(tl["transfers"][i]["kind"], t.kind == Transfer::Kind::kOffload ? "offload" : "reload");
    EXPECT_DOUBLE_EQ(tl["transfers"][i]["bytes"].get<double>(), t.bytes);
    EXPECT_DOUBLE_EQ(tl["transfers"][i]["end"].get<double>(), t.end);
  }
  int transfers = 0;
  for (const json& dev : r.doc["simulation"]["devices"]) transfers += dev["transfers"].get<int>();
  EXPECT_EQ(transfers, static_cast<int>(sim.transfers.size()));
  // The channels: two per PCIe group, their transfers adding up to the timeline's.
  const json& channels = r.doc["simulation"]["channels"];
  ASSERT_EQ(channels.size(), static_cast<std::size_t>(2 * sim.num_groups));
  int carried = 0;
  for (const json& c : channels) {
    carried += c["transfers"].get<int>();
    double busy = 0;
    for (const Transfer& t : sim.transfers) {
      if (t.group == c["group"].get<int>() && (t.kind == Transfer::Kind::kReload) == (c["direction"] == "h2d")) busy += t.end - t.start;
    }
    EXPECT_NEAR(c["busy"].get<double>(), busy, 1e-9);
    EXPECT_NEAR(c["share"].get<double>(), busy / sim.makespan, 1e-12);
  }
  EXPECT_EQ(carried, static_cast<int>(sim.transfers.size()));
  // Without --timeline there is none.
  const JsonRun plain = run_json("simulate --format json " + q(ipath) + " " + q(spath));
  ASSERT_ONE_DOCUMENT(plain);
  EXPECT_FALSE(plain.doc["simulation"].contains("timeline"));
}

TEST(CliJson, SimulateSaysWhenTheScheduleDeadlocksOrIsMalformed) {
  OPTPIPE_REQUIRE_CLI();
  const std::string inst = write_temp("one-activation.json", R"({"format": "optpipe-instance/1", "name": "one",
    "microbatches": 2, "devices": [{"memory_limit": "1.5GiB"}],
    "stages": [{"device": 0, "forward": 1, "backward": 1, "weight": 1, "activation": "1GiB"}]})");
  const std::string stuck = write_temp("stuck.json", R"({"format": "optpipe-schedule/1", "instance": "one",
    "devices": [["F0.0", "F0.1", "B0.0", "W0.0", "B0.1", "W0.1"]]})");
  const std::string twice = write_temp("twice.json", R"({"format": "optpipe-schedule/1", "instance": "one",
    "devices": [["F0.0", "B0.0", "W0.0", "F0.1", "B0.1", "W0.1", "F0.0"]]})");
  const JsonRun r = run_json("simulate --format json " + q(inst) + " " + q(stuck));
  EXPECT_EQ(r.status, 1);
  ASSERT_ONE_DOCUMENT(r);
  EXPECT_EQ(r.doc["valid"], false);
  const json& sim = r.doc["simulation"];
  EXPECT_EQ(sim["feasible"], false);
  EXPECT_TRUE(sim["makespan"].is_null()) << sim;  // infinite: null
  EXPECT_TRUE(sim["bubble"].is_null()) << sim;
  EXPECT_NE(sim["reason"].get<std::string>().find("F0.1"), std::string::npos) << sim;
  ASSERT_FALSE(sim["stalls"].empty());
  EXPECT_EQ(sim["stalls"][0]["kind"], "forward_memory");
  EXPECT_EQ(sim["stalls"][0]["action"], "F0.1");
  EXPECT_EQ(r.doc["violations"][0]["rule"], "deadlock");
  const JsonRun m = run_json("simulate --format json " + q(inst) + " " + q(twice));
  EXPECT_EQ(m.status, 1);
  ASSERT_ONE_DOCUMENT(m);
  EXPECT_TRUE(m.doc["simulation"].is_null());
  ASSERT_FALSE(m.doc["violations"].empty());
  EXPECT_EQ(m.doc["violations"][0]["rule"], "duplicate");
  EXPECT_EQ(m.doc["violations"][0]["device"], 0);
  EXPECT_EQ(m.doc["violations"][0]["position"], 6);
}

TEST(CliJson, ValidateMatchesTheValidatorAndListsTheClaims) {
  OPTPIPE_REQUIRE_CLI();
  const std::string ipath = shipped("uniform-4x8");
  const Instance inst = load_instance(ipath);
  const std::string spath = heuristic_schedule_file(inst, "zb-h1", "zb-h1.json");
  Schedule sch = load_schedule(spath);
  const JsonRun ok = run_json("validate --format json " + q(ipath) + " " + q(spath));
  EXPECT_EQ(ok.status, 0) << ok.err;
  ASSERT_ONE_DOCUMENT(ok);
  EXPECT_EQ(ok.doc["format"], "optpipe-validate-report/1");
  EXPECT_EQ(ok.doc["valid"], true);
  EXPECT_TRUE(ok.doc["warnings"].empty());
  EXPECT_TRUE(ok.doc["infeasible_instance"].is_null());
  expect_simulation(ok.doc["simulation"], inst, *validate(inst, sch).sim);
  sch.makespan = 1.0;  // claims the simulation denies: warnings in the document, not text on stdout
  sch.status = "infeasible";
  save_schedule(sch, spath);
  const JsonRun claims = run_json("validate --format json " + q(ipath) + " " + q(spath));
  EXPECT_EQ(claims.status, 0);
  ASSERT_ONE_DOCUMENT(claims);
  ASSERT_EQ(claims.doc["warnings"].size(), 2u) << claims.doc["warnings"];
  EXPECT_NE(claims.doc["warnings"][0].get<std::string>().find("the file says makespan 1.000 ms"), std::string::npos);
  // The instance alone; one that no schedule fits says why, and is still a valid file (exit 0).
  const std::string tight = write_temp("tight.json", R"({"format": "optpipe-instance/1", "name": "tight",
    "microbatches": 2, "devices": [{"memory_limit": "1GiB", "static_memory": "0.5GiB"}],
    "stages": [{"device": 0, "forward": 1, "backward": 1, "weight": 1, "activation": "1GiB"}]})");
  const JsonRun alone = run_json("validate --format json " + q(tight));
  EXPECT_EQ(alone.status, 0);
  ASSERT_ONE_DOCUMENT(alone);
  EXPECT_EQ(alone.doc["valid"], true);
  EXPECT_TRUE(alone.doc["schedule"].is_null());
  EXPECT_EQ(alone.doc["infeasible_instance"], *obviously_infeasible(load_instance(tight)));
}

TEST(CliJson, ScheduleMatchesTheHeuristics) {
  OPTPIPE_REQUIRE_CLI();
  const std::string ipath = shipped("gpt-8x24-tight"), out = ts::temp_file("json", "best.json");
  const Instance inst = load_instance(ipath);
  const BestResult best = run_all_heuristics(inst);
  ASSERT_NE(best.best_result(), nullptr);
  const JsonRun r = run_json("schedule --format json -o " + q(out) + " " + q(ipath));
  EXPECT_EQ(r.status, 0) << r.err;
  ASSERT_ONE_DOCUMENT(r);
  EXPECT_EQ(r.doc["format"], "optpipe-schedule-report/1");
  EXPECT_EQ(r.doc["status"], "feasible");
  EXPECT_EQ(r.doc["output"], out);
  EXPECT_TRUE(r.doc["svg"].is_null());
  ASSERT_EQ(r.doc["heuristics"].size(), best.results.size());
  for (std::size_t i = 0; i < best.results.size(); ++i) {
    const HeuristicResult& h = best.results[i];
    const json& j = r.doc["heuristics"][i];
    EXPECT_EQ(j["name"], h.name);
    EXPECT_EQ(j["fits"], h.ok()) << h.name;
    if (h.ok()) {
      EXPECT_DOUBLE_EQ(j["makespan"].get<double>(), h.sim.makespan) << h.name;
      EXPECT_EQ(j["peak_memory"].size(), static_cast<std::size_t>(inst.num_devices()));
    } else {
      EXPECT_TRUE(j["makespan"].is_null()) << h.name;
      EXPECT_EQ(j["reason"], h.reason);
    }
  }
  EXPECT_EQ(r.doc["best"]["name"], best.best_result()->name);
  // The schedule in the document is the file's, and its simulation is simulate()'s.
  const Schedule written = load_schedule(out);
  EXPECT_EQ(schedule_from_json(r.doc["schedule"]).devices, written.devices);
  expect_simulation(r.doc["best"]["simulation"], inst, simulate(inst, written));
  EXPECT_EQ(r.err.find("wrote"), std::string::npos) << r.err;
}

TEST(CliJson, ScheduleSaysWhenNothingFits) {
  OPTPIPE_REQUIRE_CLI();
  const std::string inst = write_temp("too-small.json", R"({"format": "optpipe-instance/1", "name": "too-small",
    "microbatches": 2,
    "devices": [{"memory_limit": "10GiB", "static_memory": "9.5GiB"}, {"memory_limit": "10GiB"}],
    "stages": [{"device": 0, "forward": 1, "backward": 1, "weight": 1, "activation": "1GiB"},
               {"device": 1, "forward": 1, "backward": 1, "weight": 1, "activation": "1GiB"}]})");
  const std::string out = ts::temp_file("json", "too-small-schedule.json");
  const JsonRun r = run_json("schedule --format json -o " + q(out) + " " + q(inst));
  EXPECT_EQ(r.status, 1);
  ASSERT_ONE_DOCUMENT(r);
  EXPECT_EQ(r.doc["status"], "infeasible");
  EXPECT_EQ(r.doc["reason"], *obviously_infeasible(load_instance(inst)));
  EXPECT_TRUE(r.doc["best"].is_null());
  EXPECT_TRUE(r.doc["schedule"].is_null());
  EXPECT_EQ(r.doc["output"], out);
  EXPECT_EQ(load_schedule(out).status, "infeasible");  // as solve writes it
  // One heuristic that does not fit an instance that others do: "unknown", not a proof.
  const JsonRun one = run_json("schedule --format json --heuristic 1f1b " + q(shipped("gpt-8x24-tight")));
  EXPECT_EQ(one.status, 1);
  ASSERT_ONE_DOCUMENT(one);
  EXPECT_EQ(one.doc["status"], "unknown");
  ASSERT_EQ(one.doc["heuristics"].size(), 1u);
  EXPECT_EQ(one.doc["heuristics"][0]["fits"], false);
  EXPECT_NE(one.doc["heuristics"][0]["reason"].get<std::string>().find("1F1B needs"), std::string::npos);
  EXPECT_TRUE(one.doc["output"].is_null());
}

TEST(CliJson, WarningsGoToStandardErrorAndBadInputIsAnErrorDocument) {
  OPTPIPE_REQUIRE_CLI();
  const std::string ipath = shipped("uniform-4x8");
  const Instance inst = load_instance(ipath);
  const std::string spath = heuristic_schedule_file(inst, "1f1b", "renamed.json");
  Schedule sch = load_schedule(spath);
  sch.instance = "another";
  save_schedule(sch, spath);
  const JsonRun warned = run_json("simulate --format json " + q(ipath) + " " + q(spath));
  EXPECT_EQ(warned.status, 0);
  ASSERT_ONE_DOCUMENT(warned);
  EXPECT_NE(warned.err.find("warning: " + spath + " is for instance \"another\""), std::string::npos) << warned.err;
  const std::string bad = write_temp("bad.json", R"({"format": "optpipe-instance/1", "name": "bad",
    "microbatches": 2, "devices": [{"memory_limit": "1GiB"}],
    "stages": [{"device": 0, "forward": -1, "backward": 1, "weight": 1, "activation": "1MiB"}]})");
  for (const std::string& args : {"simulate --format json " + q(bad) + " " + q(spath), "validate --format=json " + q(bad),
                                  "schedule --format json " + q(bad), "schedule --format json -o - " + q(ipath)}) {
    const JsonRun r = run_json(args);
    EXPECT_EQ(r.status, 2) << args;
    ASSERT_ONE_DOCUMENT(r);
    EXPECT_EQ(r.doc["format"], "optpipe-error/1") << args;
    EXPECT_EQ(r.doc["exit_code"], 2);
    EXPECT_NE(r.err.find("optpipe: error: " + r.doc["error"].get<std::string>()), std::string::npos) << r.err;
  }
  EXPECT_NE(run_json("validate --format json " + q(bad)).doc["error"].get<std::string>().find("stages[0].forward"),
            std::string::npos);
  // solve --log-format json: JSON lines, the last one an error event.
  const JsonRun solve = run_json("solve --log-format json " + q(bad));
  EXPECT_EQ(solve.status, 2);
  ASSERT_ONE_DOCUMENT(solve);
  EXPECT_EQ(solve.doc["event"], "error");
  // Text stays the default, and says nothing in JSON.
  const JsonRun text = run_json("validate " + q(ipath));
  EXPECT_FALSE(text.parsed) << text.out;
  EXPECT_NE(text.out.find("instance OK"), std::string::npos);
}

TEST(CliJson, GenerateMatchesTheGenerator) {
  OPTPIPE_REQUIRE_CLI();
  gen::GenerateRequest req;
  req.model = "gpt3-1.5b";
  req.devices = 4;
  req.microbatches = 8;
  req.memory_limit = "12GiB";  // device 0 does not fit one activation: a warning
  const gen::GenerateOptions options = gen::resolve(req);
  const gen::Generated g = gen::generate(options);
  ASSERT_FALSE(g.warnings.empty());
  const std::string out = ts::temp_file("json", "gpt.json");
  const JsonRun r = run_json("generate --model gpt3-1.5b --devices 4 --microbatches 8 --memory-limit 12GiB "
                             "--format json -o " + q(out));
  EXPECT_EQ(r.status, 0) << r.err;
  ASSERT_ONE_DOCUMENT(r);
  EXPECT_EQ(r.doc["format"], "optpipe-generate-report/1");
  EXPECT_EQ(r.doc["instance"], json::parse(gen::generated_instance_json(g.instance)));
  EXPECT_EQ(ts::read_text(out), gen::generated_instance_json(g.instance));
  EXPECT_EQ(r.doc["output"], out);
  ASSERT_EQ(r.doc["stages"].size(), static_cast<std::size_t>(g.instance.num_stages()));
  for (int s = 0; s < g.instance.num_stages(); ++s) {
    EXPECT_DOUBLE_EQ(r.doc["stages"][s]["forward"].get<double>(), g.instance.stages[s].forward);
    EXPECT_DOUBLE_EQ(r.doc["stages"][s]["activation"].get<double>(), g.instance.stages[s].activation);
    EXPECT_EQ(r.doc["stages"][s]["layers"], g.layers[s]);
  }
  EXPECT_EQ(r.doc["model"]["layers"], options.model.layers);
  EXPECT_EQ(r.doc["model"]["name"], "gpt3-1.5b");
  EXPECT_EQ(r.doc["one_f_one_b"]["fits"], false);
  EXPECT_EQ(r.doc["warnings"], json(g.warnings));
  EXPECT_NE(r.err.find("optpipe: warning: " + g.warnings.front()), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("stage device layers"), std::string::npos) << r.err;  // no text summary
  // Without -o the instance is only in the document.
  const JsonRun inline_only = run_json("generate --model gpt3-1.5b --devices 4 --microbatches 8 --format json");
  ASSERT_ONE_DOCUMENT(inline_only);
  EXPECT_TRUE(inline_only.doc["output"].is_null());
  const JsonRun presets = run_json("generate --list-presets --format json");
  ASSERT_ONE_DOCUMENT(presets);
  EXPECT_EQ(presets.doc["models"].size(), gen::model_presets().size());
}

TEST(CliJson, CacheListMatchesTheCache) {
  OPTPIPE_REQUIRE_CLI();
  const std::string file = ts::temp_file("json", "cache.sqlite");
  const JsonRun none = run_json("cache list --format json --cache " + q(file));
  EXPECT_EQ(none.status, 0) << none.err;
  ASSERT_ONE_DOCUMENT(none);
  EXPECT_EQ(none.doc["exists"], false);
  EXPECT_TRUE(none.doc["entries"].empty());
  const ts::ShellRun solved = ts::run_shell(q(ts::kCliPath) + " solve -q --cache " + q(file) + " " + q(shipped("tiny-2x3")));
  ASSERT_EQ(solved.status, 0) << solved.output;
  std::vector<cache::CacheEntry> entries;
  {
    cache::ScheduleCache c(file, false);
    ASSERT_TRUE(c.list(entries).ok);
  }
  ASSERT_EQ(entries.size(), 1u);
  const JsonRun r = run_json("cache list --format json --cache " + q(file));
  EXPECT_EQ(r.status, 0) << r.err;
  ASSERT_ONE_DOCUMENT(r);
  EXPECT_EQ(r.doc["format"], "optpipe-cache-list/1");
  EXPECT_EQ(r.doc["file"], file);
  EXPECT_EQ(r.doc["exists"], true);
  ASSERT_EQ(r.doc["entries"].size(), 1u);
  const json& e = r.doc["entries"][0];
  EXPECT_EQ(e["exact_key"], entries[0].exact_key);
  EXPECT_EQ(e["instance_name"], "tiny-2x3");
  EXPECT_DOUBLE_EQ(e["makespan"].get<double>(), entries[0].makespan);
  EXPECT_DOUBLE_EQ(e["bound"].get<double>(), entries[0].bound);
  EXPECT_EQ(e["status"], entries[0].status);
  EXPECT_EQ(e["proven_optimal"], entries[0].proven_optimal());
  EXPECT_DOUBLE_EQ(e["created"].get<double>(), entries[0].created);
}

}  // namespace
}  // namespace optpipe
