// `optpipe partition` and `optpipe generate --partition auto` end to end (issue 22): the help's
// example, the files and the JSON table, the same instance from both commands, a profile in
// place of a preset, bad input (exit 2) and no split that fits (exit 1).
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "instances/generator/generate.h"
#include "model/instance_io.h"
#include "model/schedule_io.h"
#include "model/validator.h"
#include "tests/test_util.h"

namespace optpipe {
namespace {

using test_support::kCliPath;
using test_support::read_text;
using test_support::run_shell;
using test_support::shell_quote;
using test_support::ShellRun;
using test_support::temp_file;

ShellRun cli(const std::string& args) { return run_shell(shell_quote(kCliPath) + " " + args); }
// A small model: 6 layers of GPT-3 1.5B on 3 GPUs, every split solved and proven in milliseconds.
const std::string kSmall = "--model gpt3-1.5b --layers 6 --devices 3 --microbatches 4 --memory-limit 4act --time-limit 20";

TEST(PartitionCli, HelpShowsAnExample) {
  OPTPIPE_REQUIRE_CLI();
  const ShellRun help = cli("partition --help");
  EXPECT_EQ(help.status, 0) << help.output;
  for (const char* text : {"Examples:", "optpipe partition --model gpt3-1.5b", "--profile", "--schedule-out",
                           "--time-limit", "--format", "memory floor"}) {
    EXPECT_NE(help.output.find(text), std::string::npos) << text;
  }
  const ShellRun gen_help = cli("generate --help");
  EXPECT_NE(gen_help.output.find("--partition"), std::string::npos) << gen_help.output;
}

// The instance (-o), its schedule (--schedule-out) and the JSON table agree: the schedule is
// valid for the instance and has the best trial's makespan; the references are in the table.
TEST(PartitionCli, WritesTheBestSplitsInstanceScheduleAndJson) {
  OPTPIPE_REQUIRE_CLI();
  const std::string inst_path = temp_file("partition", "best.json"), sched_path = temp_file("partition", "best.schedule.json");
  const ShellRun r = cli("partition " + kSmall + " --format json -o " + shell_quote(inst_path) + " --schedule-out " +
                         shell_quote(sched_path) + " -q");
  ASSERT_EQ(r.status, 0) << r.output;
  const nlohmann::json doc = nlohmann::json::parse(r.output);
  EXPECT_EQ(doc["mode"], "exhaustive");
  EXPECT_TRUE(doc["proven"].get<bool>());
  const std::vector<int> best = doc["best"]["split"];
  const Instance inst = load_instance(inst_path);
  const Schedule sched = load_schedule(sched_path);
  EXPECT_TRUE(validate(inst, sched).valid());
  const SimResult sim = simulate(inst, sched);
  EXPECT_NEAR(sim.makespan, doc["best"]["makespan"].get<double>(), 1e-6);
  bool has_default = false;
  for (const auto& t : doc["trials"]) {
    for (const auto& role : t["roles"]) has_default = has_default || role == "default";
    if (t["solved"].get<bool>()) EXPECT_LE(t["cheap_bound"].get<double>(), t["makespan"].get<double>() + 1e-9);
  }
  EXPECT_TRUE(has_default);
  ASSERT_EQ(static_cast<int>(best.size()), inst.num_stages());
  // The text table: the best split marked, the default beside it, progress on stderr.
  const ShellRun text = cli("partition " + kSmall);
  ASSERT_EQ(text.status, 0) << text.output;
  for (const char* part : {"cheap bound", "memory floor", "makespan", "best split", "partition: solved", "default"}) {
    EXPECT_NE(text.output.find(part), std::string::npos) << part << "\n" << text.output;
  }
}

// generate --partition auto writes the search's instance: the same file as `partition -o`, and
// as `generate --split <that split>` with the limit the search held fixed.
TEST(GeneratePartitionAuto, WritesThePartitionsInstance) {
  OPTPIPE_REQUIRE_CLI();
  const std::string a = temp_file("auto", "gen.json"), b = temp_file("auto", "part.json"), c = temp_file("auto", "split.json");
  const ShellRun g = cli("generate " + kSmall + " --partition auto -o " + shell_quote(a));
  ASSERT_EQ(g.status, 0) << g.output;
  EXPECT_NE(g.output.find("partition: split "), std::string::npos) << g.output;
  const ShellRun p = cli("partition " + kSmall + " -q -o " + shell_quote(b));
  ASSERT_EQ(p.status, 0) << p.output;
  EXPECT_EQ(read_text(a), read_text(b));
  const Instance inst = load_instance(a);
  std::string split = g.output.substr(g.output.find("partition: split ") + 17);
  split = split.substr(0, split.find(", makespan"));
  const ShellRun s = cli("generate --model gpt3-1.5b --layers 6 --devices 3 --microbatches 4 --split " + split +
                         " --memory-limit " + std::to_string(static_cast<long long>(inst.devices[0].memory_limit)) +
                         "B -q -o " + shell_quote(c));
  ASSERT_EQ(s.status, 0) << s.output;
  EXPECT_EQ(read_text(a), read_text(c));
  // --split and --partition auto exclude each other.
  const ShellRun both = cli("generate " + kSmall + " --partition auto --split 2,2,2");
  EXPECT_EQ(both.status, 2) << both.output;
  EXPECT_NE(both.output.find("--split and --partition auto exclude each other"), std::string::npos) << both.output;
  const ShellRun limit = cli("generate --model gpt3-1.5b --devices 4 --microbatches 8 --time-limit 5");
  EXPECT_EQ(limit.status, 2) << limit.output;
  EXPECT_NE(limit.output.find("--time-limit: the time of --partition auto's search"), std::string::npos) << limit.output;
}

// --placement auto: one stage per GPU, V and loop under one memory limit; the best one's instance
// and schedule are written and agree with the JSON; generate has no such placement.
TEST(PartitionCli, PlacementAutoComparesThePlacementsUnderOneLimit) {
  OPTPIPE_REQUIRE_CLI();
  const std::string inst_path = temp_file("placements", "best.json"), sched_path = temp_file("placements", "best.schedule.json");
  const std::string model = "--model gpt3-1.5b --layers 8 --devices 2 --microbatches 4 --memory-limit 2act --time-limit 20";
  const ShellRun r = cli("partition " + model + " --placement auto --format json -q -o " + shell_quote(inst_path) +
                         " --schedule-out " + shell_quote(sched_path));
  ASSERT_EQ(r.status, 0) << r.output;
  const nlohmann::json doc = nlohmann::json::parse(r.output);
  ASSERT_EQ(doc["placements"].size(), 3u) << r.output;
  std::vector<std::string> words;
  for (const auto& p : doc["placements"]) {
    words.push_back(p["placement"]);
    EXPECT_EQ(p["memory_limit"].get<double>(), doc["memory_limit"].get<double>()) << p["placement"];
  }
  EXPECT_EQ(words, (std::vector<std::string>{"one", "v", "loop"}));
  const std::string best = doc["best_placement"];
  EXPECT_LE(doc["best"]["makespan"].get<double>(), doc["reference"]["makespan"].get<double>() + 1e-9);
  for (const auto& p : doc["placements"]) {
    EXPECT_GE(p["best"]["makespan"].get<double>(), doc["best"]["makespan"].get<double>() - 1e-9) << p["placement"];
  }
  const Instance inst = load_instance(inst_path);
  EXPECT_EQ(inst.num_stages(), best == "one" ? 2 : 4);
  const Schedule sched = load_schedule(sched_path);
  EXPECT_TRUE(validate(inst, sched).valid());
  EXPECT_NEAR(simulate(inst, sched).makespan, doc["best"]["makespan"].get<double>(), 1e-6);
  const ShellRun text = cli("partition " + model + " --placement auto");
  ASSERT_EQ(text.status, 0) << text.output;
  for (const char* part : {"== placement one ==", "== placement v ==", "== placement loop ==", "placements compared",
                           "partition: placement v: searching", "partition: v: solved", "\nbest: "}) {
    EXPECT_NE(text.output.find(part), std::string::npos) << part << "\n" << text.output;
  }
  const ShellRun gen = cli("generate " + model + " --placement auto");
  EXPECT_EQ(gen.status, 2) << gen.output;
}

// A profile instead of a preset: the preset's own profile (--profile-out) read back.
TEST(PartitionCli, TakesALayerProfile) {
  OPTPIPE_REQUIRE_CLI();
  const std::string prof = temp_file("profile", "layers.json"), inst_path = temp_file("profile", "inst.json");
  const ShellRun out = cli("partition " + kSmall + " -q --profile-out " + shell_quote(prof));
  ASSERT_EQ(out.status, 0) << out.output;
  const ShellRun r = cli("partition --profile " + shell_quote(prof) +
                         " --devices 3 --microbatches 4 --memory-limit 4act --time-limit 20 -q -o " + shell_quote(inst_path));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("best split"), std::string::npos) << r.output;
  EXPECT_EQ(load_instance(inst_path).num_stages(), 3);
  // Every placement from the profile: the same byte limit for each (4act resolved on the first).
  const ShellRun all = cli("partition --profile " + shell_quote(prof) +
                           " --devices 3 --microbatches 4 --memory-limit 4act --placement auto --time-limit 20 -q --format json");
  ASSERT_EQ(all.status, 0) << all.output;
  const nlohmann::json doc = nlohmann::json::parse(all.output);
  ASSERT_EQ(doc["placements"].size(), 3u);
  for (const auto& p : doc["placements"]) {
    EXPECT_EQ(p["memory_limit"].get<double>(), doc["memory_limit"].get<double>()) << p["placement"];
    EXPECT_EQ(p["stages"].get<int>(), p["placement"] == "one" ? 3 : 6);
  }
}

TEST(PartitionCli, BadInputExitsTwoNamingTheProblem) {
  OPTPIPE_REQUIRE_CLI();
  const std::string bad_profile = temp_file("bad", "profile.json");
  {
    std::FILE* f = std::fopen(bad_profile.c_str(), "w");
    std::fputs(R"({"format": "optpipe-layer-profile/1", "layers": [{"forward": 1, "backward": "x", "activation": 1}]})", f);
    std::fclose(f);
  }
  const std::pair<std::string, std::string> cases[] = {
      {"partition --model gpt3-99b --devices 4 --microbatches 8", "model: unknown preset"},
      {"partition --devices 4 --microbatches 8", "give a preset (--model)"},
      {"partition --model gpt3-1.5b --microbatches 8", "devices: required"},
      {"partition --model gpt3-1.5b --devices 4 --microbatches 8 --format xml", "--format"},
      {"partition --model gpt3-1.5b --devices 4 --microbatches 8 --time-limit 0", "--time-limit"},
      {"partition --model gpt3-1.5b --devices 64 --microbatches 8", "model.layers: 22 layers cannot fill 64 stages"},
      {"partition --profile " + bad_profile + " --model gpt3-1.5b --devices 4 --microbatches 8", "--model: describes a model"},
      {"partition --profile " + bad_profile + " --devices 1 --microbatches 8", "layers[0].backward"},
      {"partition --profile /nonexistent/p.json --devices 1 --microbatches 8", "/nonexistent/p.json"},
      {"partition " + kSmall + " -o /nonexistent/dir/x.json", "/nonexistent/dir/x.json"},
  };
  for (const auto& [args, expected] : cases) {
    const ShellRun r = cli(args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(expected), std::string::npos) << args << "\n" << r.output;
  }
}

TEST(PartitionCli, NoSplitFitsExitsOneNamingTheStage) {
  OPTPIPE_REQUIRE_CLI();
  const ShellRun r = cli("partition --model gpt3-6.2b --devices 4 --microbatches 8 --memory-limit 5GiB");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("stage 3 (device 3, with the output layer) needs at least"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("over the limit"), std::string::npos) << r.output;
  const ShellRun g = cli("generate --model gpt3-6.2b --devices 4 --microbatches 8 --memory-limit 5GiB --partition auto");
  EXPECT_EQ(g.status, 1) << g.output;
}

// Ctrl-C (and SIGTERM) stop the search, as for solve: the splits solved so far are reported, the
// best one's files written, and the process exits normally, well before its time limit.
TEST(PartitionCli, StopSignalEndsTheSearchWithTheBestSplitWritten) {
  OPTPIPE_REQUIRE_CLI();
  const std::string out = temp_file("partition", "stopped.json");
  const ShellRun r = run_shell("(" + shell_quote(kCliPath) +
                               " partition --model llama2-7b --devices 8 --microbatches 32 --memory-limit 2act "
                               "--time-limit 120 -q -o " + shell_quote(out) +
                               " & pid=$!; sleep 4; kill -INT $pid; wait $pid; echo \"exit=$?\")");
  EXPECT_NE(r.output.find("exit=0"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("best split "), std::string::npos) << r.output;
  EXPECT_NO_THROW(load_instance(out)) << r.output;
}

}  // namespace
}  // namespace optpipe
