// The command's number checks (cli/validators.h): numbers as people write them, and range
// errors that name the flag and the end crossed, never DBL_MAX's 309 digits (issue 23).
#include <gtest/gtest.h>

#include <cfloat>
#include <string>
#include <vector>

#include "cli/validators.h"
#include "tests/test_paths.h"
#include "tests/test_util.h"

namespace optpipe::cli {
namespace {

TEST(Validators, ReadableNumbers) {
  EXPECT_EQ(readable_number(DBL_MAX), "1.8e308");
  EXPECT_EQ(readable_number(0), "0");
  EXPECT_EQ(readable_number(1 << 20), "1048576");
  EXPECT_EQ(readable_number(0.5), "0.5");
  EXPECT_EQ(readable_number(-2.25), "-2.25");
  EXPECT_EQ(readable_number(1e-5), "1e-5");
  EXPECT_EQ(readable_number(2e21), "2e21");
}

TEST(Validators, MessagesNameTheRule) {
  std::string value = "-1";
  EXPECT_EQ(at_least(0)(value), "must be at least 0, not -1");
  value = "0";
  EXPECT_EQ(more_than(0)(value), "must be more than 0, not 0");
  value = "2";
  EXPECT_EQ(from_to(0, 1)(value), "must be from 0 to 1, not 2");
  value = "1";
  EXPECT_EQ(from_to(0, 1)(value), "");
  value = "nan";
  EXPECT_EQ(at_least(0)(value), "must be at least 0, not nan");
  value = "lots";
  EXPECT_EQ(at_least(0)(value), "must be a number, not \"lots\"");
}

// Every flag that had CLI11's NonNegativeNumber or PositiveNumber printed 1.797...e308 in full.
TEST(Validators, RangeErrorsOfTheCommandAreShort) {
  OPTPIPE_REQUIRE_CLI();
  const std::string cli = test_support::shell_quote(test_support::kCliPath);
  const std::string inst = test_support::shell_quote(std::string(OPTPIPE_SOURCE_DIR) + "/instances/tiny-2x3.json");
  struct Case {
    std::string args, message;
  };
  const std::vector<Case> cases{
      {"solve " + inst + " --time-limit -1", "--time-limit: must be at least 0, not -1"},
      {"solve " + inst + " --threads -1", "--threads: must be at least 0, not -1"},
      {"solve " + inst + " --gap 2", "--gap: must be from 0 to 1, not 2"},
      {"cache prune --keep -1", "--keep: must be at least 0, not -1"},
      {"train " + inst + " --iterations 0", "--iterations: must be more than 0, not 0"},
      {"render " + inst + " x.json -o x.svg --width 5", "--width: must be from 300 to 20000, not 5"},
  };
  for (const Case& c : cases) {
    const auto r = test_support::run_shell(cli + " " + c.args);
    EXPECT_EQ(r.status, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << c.args << "\n" << r.output;
    EXPECT_EQ(r.output.find("179769313"), std::string::npos) << c.args << "\n" << r.output;
    EXPECT_LT(r.output.size(), 200u) << c.args << "\n" << r.output;
  }
}

}  // namespace
}  // namespace optpipe::cli
