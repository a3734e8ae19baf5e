// `optpipe frontier` end to end: the table on stdout, the JSON file and --format json, the SVG
// file, --help with an example, and bad input (exit 2, saying what is wrong).
#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "model/instance_io.h"
#include "model/schedule_io.h"
#include "model/validator.h"
#include "frontier/memory_limits.h"
#include "tests/test_paths.h"
#include "tests/test_util.h"

namespace optpipe {
namespace {

using test_support::run_shell;
using test_support::shell_quote;

const std::string kTiny = std::string(OPTPIPE_SOURCE_DIR) + "/instances/tiny-2x3.json";

test_support::ShellRun frontier(const std::string& args) {
  return run_shell(shell_quote(test_support::kCliPath) + " frontier " + args);
}

TEST(FrontierCli, TableJsonAndSvg) {
  OPTPIPE_REQUIRE_CLI();
  const std::string json = test_support::temp_file("frontier", "tiny.json");
  const std::string svg = test_support::temp_file("frontier", "tiny.svg");
  const auto r = frontier(shell_quote(kTiny) + " --steps 3 --time-limit 3 --no-cache -o " + shell_quote(json) +
                          " --svg " + shell_quote(svg));
  ASSERT_EQ(r.status, 0) << r.output;
  // The table (stdout) and the progress lines (stderr).
  EXPECT_NE(r.output.find("tiny-2x3: memory-time frontier, 3 limits from 11.0 GiB (the memory floor) to 13.0 GiB"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("memory floor 11.0 GiB: device 0 (stage 0): static 10.0 GiB + stage 0's activation"),
            std::string::npos);
  EXPECT_NE(r.output.find("    13.0 GiB      10.100 ms      10.100 ms    0.00%  optimal"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("  ZB-H2        fits from   13.0 GiB (device 0)  makespan      10.100 ms"),
            std::string::npos);
  EXPECT_NE(r.output.find("optpipe: frontier: 3/3 at 13.0 GiB"), std::string::npos);
  // The JSON: every point's schedule valid under its limit.
  const nlohmann::json doc = nlohmann::json::parse(test_support::read_text(json));
  EXPECT_EQ(doc["format"], "optpipe-frontier/1");
  EXPECT_EQ(doc["floor"]["proven"], true);
  ASSERT_EQ(doc["points"].size(), 3u);
  const Instance inst = load_instance(kTiny);
  for (const auto& p : doc["points"]) {
    const Schedule sch = schedule_from_json(p["schedule"]);
    const Validation v = validate(frontier::with_memory_limit(inst, p["run_limit"].get<double>()), sch);
    ASSERT_TRUE(v.valid()) << p.dump();
    EXPECT_NEAR(v.sim->makespan, p["makespan"].get<double>(), 1e-9);
  }
  EXPECT_EQ(doc["classics"].size(), 4u);
  const std::string picture = test_support::read_text(svg);
  EXPECT_EQ(picture.rfind("<?xml", 0), 0u);
  EXPECT_NE(picture.find("memory limit per GPU (GiB)"), std::string::npos);
}

TEST(FrontierCli, FormatJsonOnStdout) {
  OPTPIPE_REQUIRE_CLI();
  const auto r = frontier(shell_quote(kTiny) + " --limits 11GiB..12GiB --steps 2 --time-limit 2 --no-cache "
                          "--format json -q 2>/dev/null");
  ASSERT_EQ(r.status, 0) << r.output;
  const nlohmann::json doc = nlohmann::json::parse(r.output);
  ASSERT_EQ(doc["points"].size(), 2u);
  EXPECT_EQ(doc["range"]["low_default"], false);
  EXPECT_EQ(doc["points"][1]["limit"], 12.0 * test_support::GiB);
  EXPECT_TRUE(doc["unconstrained"].is_null()) << "both ends given: no solve without a limit";
}

TEST(FrontierCli, HelpHasAnExample) {
  OPTPIPE_REQUIRE_CLI();
  const auto r = frontier("--help");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.output.find("Example:\n  optpipe frontier instances/gpt-8x24-tight.json --limits"), std::string::npos)
      << r.output;
}

TEST(FrontierCli, BadInputExitsTwoSayingWhy) {
  OPTPIPE_REQUIRE_CLI();
  const struct {
    std::string args, message;
  } cases[] = {
      {shell_quote(kTiny) + " --limits 13GiB..12GiB", "limits 13.0 GiB..12.0 GiB: the lower end is above the upper end"},
      {shell_quote(kTiny) + " --limits 1GiB..10GiB",
       "every limit is below the memory floor 11.0 GiB, 1.00 GiB above the upper end: device 0 (stage 0)"},
      {shell_quote(kTiny) + " --limits 11..12GiB", "--limits '11..12GiB': the lower end '11': "},
      {shell_quote(kTiny) + " --limits 12GiB", "expected LOW..HIGH with units"},
      {shell_quote(kTiny) + " --steps 0", "--steps"},
      {"/nonexistent/x.json", "/nonexistent/x.json"},
      {shell_quote(kTiny) + " -o /nonexistent/dir/f.json", "/nonexistent/dir/f.json"},
  };
  for (const auto& c : cases) {
    const auto r = frontier(c.args + " --no-cache -q --time-limit 1");
    EXPECT_EQ(r.status, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << c.args << "\n" << r.output;
  }
}

}  // namespace
}  // namespace optpipe
