// `optpipe plan` end to end (issue 22, part 3): the help's example, the text table, the JSON
// (every option, the best first, the files of the best option), --no-offload, bad input (exit 2)
// and nothing that fits the memory limit (exit 1, naming the closest option and the stage).
#include <cmath>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "model/instance_io.h"
#include "model/schedule_io.h"
#include "model/simulator.h"
#include "model/validator.h"
#include "tests/test_util.h"

namespace optpipe {
namespace {

using test_support::kCliPath;
using test_support::run_shell;
using test_support::shell_quote;
using test_support::ShellRun;
using test_support::temp_file;

ShellRun cli(const std::string& args) { return run_shell(shell_quote(kCliPath) + " " + args); }
// 4 layers of GPT-3 1.5B on 4 GPUs, 4 sequences per iteration: 27 options, solved in milliseconds.
const std::string kSmall =
    "--model gpt3-1.5b --layers 4 --gpus 4 --global-batch 4 --micro-batch-sizes 1,2 --recompute none,full "
    "--time-limit 10";

TEST(PlanCli, HelpShowsAnExample) {
  OPTPIPE_REQUIRE_CLI();
  const ShellRun help = cli("plan --help");
  EXPECT_EQ(help.status, 0) << help.output;
  for (const char* text : {"Example:", "optpipe plan --model llama2-13b --gpus 8 --global-batch 64", "--time-limit",
                           "--instance-out", "--schedule-out", "--no-offload", "--format", "--tensor-parallel",
                           "time per global batch", "Exit codes"}) {
    EXPECT_NE(help.output.find(text), std::string::npos) << text;
  }
}

TEST(PlanCli, TextTableBestFirstWithProgressOnStderr) {
  OPTPIPE_REQUIRE_CLI();
  const ShellRun r = cli("plan " + kSmall);
  ASSERT_EQ(r.status, 0) << r.output;
  for (const char* part : {"gpt3-1.5b-custom on 4 x h100-sxm, global batch 4 x 1024 tokens, ZeRO-1", "time/batch",
                           "tokens/s", "makespan", "peak / limit", "bottleneck", "\n*   1 ", "best: ",
                           "plan: best so far: ", "cut by their bound"}) {
    EXPECT_NE(r.output.find(part), std::string::npos) << part << "\n" << r.output;
  }
}

// The JSON lists every option; the best is the fastest solved one; the instance and schedule
// files are the best option's, and its schedule runs in that makespan.
TEST(PlanCli, JsonAndTheBestOptionsFiles) {
  OPTPIPE_REQUIRE_CLI();
  const std::string plan_path = temp_file("plan", "plan.json"), inst_path = temp_file("plan", "best.json"),
                    sched_path = temp_file("plan", "best.schedule.json");
  const ShellRun r = cli("plan " + kSmall + " --format json -q -o " + shell_quote(plan_path) + " --instance-out " +
                         shell_quote(inst_path) + " --schedule-out " + shell_quote(sched_path));
  ASSERT_EQ(r.status, 0) << r.output;
  const nlohmann::json doc = nlohmann::json::parse(r.output);
  EXPECT_EQ(doc, nlohmann::json::parse(test_support::read_text(plan_path)));
  EXPECT_EQ(doc["format"], "optpipe-plan/1");
  EXPECT_EQ(doc["summary"]["options"].get<int>(), static_cast<int>(doc["options"].size()));
  double fastest = INFINITY;
  for (const auto& o : doc["options"]) {
    EXPECT_EQ(o["tensor_parallel"].get<int>() * o["pipeline_parallel"].get<int>() * o["data_parallel"].get<int>(), 4);
    EXPECT_EQ(o["micro_batch"].get<int>() * o["microbatches"].get<int>() * o["data_parallel"].get<int>(), 4);
    if (o["state"] == "solved") {
      fastest = std::min(fastest, o["time_per_batch_ms"].get<double>());
      EXPECT_LE(o["peak_memory"].get<double>(), o["memory_limit"].get<double>());
      EXPECT_GE(o["time_per_batch_ms"].get<double>(), o["makespan_ms"].get<double>());
    }
  }
  const auto& best = doc["best"];
  EXPECT_EQ(best["time_per_batch_ms"].get<double>(), fastest);
  const Instance inst = load_instance(inst_path);
  const Schedule sched = load_schedule(sched_path);
  EXPECT_TRUE(validate(inst, sched).valid());
  EXPECT_NEAR(simulate(inst, sched).makespan, best["makespan_ms"].get<double>(), 1e-6);
  EXPECT_EQ(inst.num_devices(), best["pipeline_parallel"].get<int>());
  EXPECT_EQ(inst.microbatches, best["microbatches"].get<int>());
}

TEST(PlanCli, NoOffloadAllowsOnlyLevelZero) {
  OPTPIPE_REQUIRE_CLI();
  const std::string inst_path = temp_file("plan-no-offload", "best.json");
  const ShellRun r = cli("plan " + kSmall + " --no-offload --format json -q --instance-out " + shell_quote(inst_path));
  ASSERT_EQ(r.status, 0) << r.output;
  const nlohmann::json doc = nlohmann::json::parse(r.output);
  EXPECT_EQ(doc["request"]["offload_levels"], nlohmann::json::array({0.0}));
  EXPECT_EQ(doc["best"]["offloads"].get<int>(), 0);
  EXPECT_EQ(load_instance(inst_path).offload_levels, std::vector<double>{0.0});
}

TEST(PlanCli, BadInputExitsTwoNamingTheProblem) {
  OPTPIPE_REQUIRE_CLI();
  const std::pair<std::string, std::string> cases[] = {
      {"plan --model gpt3-1.5b --global-batch 8", "gpus: required"},
      {"plan --model gpt3-1.5b --gpus 8", "global-batch: required"},
      {"plan --gpus 8 --global-batch 8", "model: give a preset"},
      {"plan --model gpt3-1.5b --gpus 8 --global-batch 8 --memory-limit 3act", "depends on the layout"},
      {"plan --model gpt3-1.5b --gpus 8 --global-batch 8 --tensor-parallel 3", "tensor_parallel: 3 does not divide"},
      {"plan --model gpt3-1.5b --gpus 8 --global-batch 8 --no-offload --offload-levels 0,1", "--no-offload allows no offload"},
      {"plan --model gpt3-1.5b --gpus 8 --global-batch 8 --micro-batch-sizes 0", "micro-batch-sizes: \"0\" is not a positive integer"},
      {"plan --model gpt3-1.5b --gpus 8 --global-batch 8 --placements one,z", "placement: unknown placement \"z\""},
      {"plan --model gpt3-1.5b --gpus 8 --global-batch 8 --recompute most", "recompute: unknown mode \"most\""},
      {"plan --model nope --gpus 8 --global-batch 8", "model: unknown preset \"nope\""},
  };
  for (const auto& [args, message] : cases) {
    const ShellRun r = cli(args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << args << "\n" << r.output;
  }
}

TEST(PlanCli, NothingFitsExitsOneNamingTheClosestOptionAndTheStage) {
  OPTPIPE_REQUIRE_CLI();
  const ShellRun r = cli("plan " + kSmall + " --memory-limit 2GiB -q");
  EXPECT_EQ(r.status, 1) << r.output;
  for (const char* part : {"no option fits the memory limit of 2.00 GiB per GPU", "the closest is tp4 pp1 dp1 one",
                           "the memory floor is device 0 (stage 0)", "over the limit", "needs at least"}) {
    EXPECT_NE(r.output.find(part), std::string::npos) << part << "\n" << r.output;
  }
}

}  // namespace
}  // namespace optpipe
