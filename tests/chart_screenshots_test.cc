// scripts/chart_screenshots.sh, which remakes the chart screenshots in docs/ with headless
// Chromium: it makes every PNG, each the size it says and under 300 KiB. Skipped, saying so,
// where Chromium is not installed (CI installs only scripts/setup.sh's packages, without it).
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/test_paths.h"
#include "tests/test_util.h"

namespace optpipe {
namespace {

namespace fs = std::filesystem;
using test_support::run_shell;
using test_support::shell_quote;

bool have_chromium() {
  if (std::getenv("CHROMIUM")) return true;
  return run_shell("(command -v chromium || command -v chromium-browser || command -v google-chrome)").status == 0;
}

// A PNG's width and height from its IHDR chunk; {0, 0} when it is not a PNG.
std::pair<std::uint32_t, std::uint32_t> png_size(const std::string& bytes) {
  if (bytes.size() < 24 || bytes.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) return {0, 0};
  auto be32 = [&](std::size_t at) {
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < 4; ++i) v = v << 8 | static_cast<unsigned char>(bytes[at + i]);
    return v;
  };
  return {be32(16), be32(20)};
}

TEST(ChartScreenshots, ScriptMakesEveryPngUnder300KiB) {
  OPTPIPE_REQUIRE_CLI();
  if (!have_chromium()) GTEST_SKIP() << "chromium is not installed (apt-get install chromium; CI does not install it)";
  const std::string out = test_support::temp_file("screenshots", "docs");
  const auto r = run_shell("OPTPIPE=" + shell_quote(test_support::kCliPath) + " " +
                           shell_quote(std::string(OPTPIPE_SOURCE_DIR) + "/scripts/chart_screenshots.sh") + " " +
                           shell_quote(out));
  ASSERT_EQ(r.status, 0) << r.output;
  const std::vector<std::string> windows = {"gantt-scale-llama2-7b-16x64-2act-middle.png",
                                            "gantt-scale-llama2-7b-32x128-2act.png",
                                            "gantt-scale-llama2-7b-32x128-2act-middle.png",
                                            "gantt-scale-llama2-7b-32x128-2act-fit.png"};
  for (const std::string& name : windows) {
    const std::string png = test_support::read_text(out + "/" + name);
    EXPECT_EQ(png_size(png), (std::pair<std::uint32_t, std::uint32_t>{1600, 1000})) << name;
    EXPECT_LT(png.size(), 300u * 1024) << name;
    EXPECT_GT(png.size(), 40u * 1024) << name << ": too small to hold a chart";
  }
  for (const char* name : {"gantt-gpt-8x24-tight.png", "gantt-gpt-8x24-tight-solved.png"}) {
    const std::string png = test_support::read_text(out + "/" + name);
    EXPECT_GE(png_size(png).first, 1400u) << name;  // the whole chart
    EXPECT_GE(png_size(png).second, 900u) << name;
    EXPECT_LT(png.size(), 300u * 1024) << name;
  }
  EXPECT_EQ(std::distance(fs::directory_iterator(out), fs::directory_iterator()), 6) << r.output;
}

}  // namespace
}  // namespace optpipe
