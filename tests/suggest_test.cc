// "Did you mean" (cli/suggest.h): the edit distance against a plain recursive definition on
// random short words, the nearest-word rule, and the CLI's messages for a mistyped command and
// flag (issue 23).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>

#include "cli/suggest.h"
#include "tests/test_paths.h"
#include "tests/test_util.h"

namespace optpipe::cli {
namespace {

// Levenshtein's distance straight from its definition (exponential; short words only).
int distance_by_definition(const std::string& a, const std::string& b) {
  if (a.empty()) return static_cast<int>(b.size());
  if (b.empty()) return static_cast<int>(a.size());
  const std::string ra = a.substr(1), rb = b.substr(1);
  if (a[0] == b[0]) return distance_by_definition(ra, rb);
  return 1 + std::min({distance_by_definition(ra, b), distance_by_definition(a, rb), distance_by_definition(ra, rb)});
}

TEST(Suggest, EditDistanceMatchesTheDefinitionOnRandomWords) {
  std::mt19937 rng(23);
  std::uniform_int_distribution<int> len(0, 6), letter(0, 2);  // 3 letters: many near misses
  for (int i = 0; i < 2000; ++i) {
    std::string a, b;
    for (int k = len(rng); k > 0; --k) a += static_cast<char>('a' + letter(rng));
    for (int k = len(rng); k > 0; --k) b += static_cast<char>('a' + letter(rng));
    ASSERT_EQ(edit_distance(a, b), distance_by_definition(a, b)) << a << " / " << b;
  }
}

TEST(Suggest, NearestWordTakesCloseOrPrefixWordsOnly) {
  const std::vector<std::string> subs{"schedule", "simulate", "solve", "render", "cache"};
  EXPECT_EQ(nearest_word("slove", subs).value_or(""), "solve");
  EXPECT_EQ(nearest_word("rendr", subs).value_or(""), "render");
  EXPECT_EQ(nearest_word("simulat", subs).value_or(""), "simulate");
  EXPECT_FALSE(nearest_word("xyzzy", subs).has_value());
  EXPECT_FALSE(nearest_word("solve", subs).has_value());  // not mistyped
  const std::vector<std::string> flags{"--time-limit", "--threads", "--gap"};
  EXPECT_EQ(nearest_word("--time", flags).value_or(""), "--time-limit");
  EXPECT_EQ(nearest_word("--treads", flags).value_or(""), "--threads");
}

TEST(Suggest, TheCliSaysWhatWasMeant) {
  OPTPIPE_REQUIRE_CLI();
  const std::string cli = test_support::shell_quote(test_support::kCliPath);
  const auto cmd = test_support::run_shell(cli + " slove x.json");
  EXPECT_EQ(cmd.status, 2) << cmd.output;
  EXPECT_NE(cmd.output.find("unknown command \"slove\" (did you mean `optpipe solve`?)"), std::string::npos)
      << cmd.output;
  const auto flag = test_support::run_shell(cli + " solve --time-limt 3 " +
                                            test_support::shell_quote(std::string(OPTPIPE_SOURCE_DIR) +
                                                                      "/instances/tiny-2x3.json"));
  EXPECT_EQ(flag.status, 2) << flag.output;
  EXPECT_NE(flag.output.find("--time-limt: did you mean --time-limit?"), std::string::npos) << flag.output;
}

// A subcommand's own subcommand (`cache prune`) has flags of its own: a right one with a bad
// value is not "mistyped" (it said "--keep: did you mean --help?"), a mistyped one is matched
// against them.
TEST(Suggest, NestedSubcommandsUseTheirOwnFlags) {
  OPTPIPE_REQUIRE_CLI();
  const std::string cli = test_support::shell_quote(test_support::kCliPath);
  const auto bad_value = test_support::run_shell(cli + " cache prune --keep -1");
  EXPECT_EQ(bad_value.status, 2) << bad_value.output;
  EXPECT_EQ(bad_value.output.find("did you mean"), std::string::npos) << bad_value.output;
  const auto typo = test_support::run_shell(cli + " cache prune --kep 3");
  EXPECT_EQ(typo.status, 2) << typo.output;
  EXPECT_NE(typo.output.find("--kep: did you mean --keep?"), std::string::npos) << typo.output;
}

}  // namespace
}  // namespace optpipe::cli
