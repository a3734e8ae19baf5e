// scripts/gpu_bundle.sh, which packs what scripts/gpu_check.sh runs for a GPU machine without
// OptPipe's build dependencies: the binaries of the build folder, and every shared library they
// need beyond glibc, the C++ runtime, CUDA, NCCL and MPI. Checked against this build: each library
// that ldd resolves for a bundled binary is either in the bundle's lib/ or one of those the machine
// brings, and the bundled command runs with only the bundle's libraries added. A build without the
// CUDA plugin gets a clear refusal and no folder.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "tests/test_paths.h"
#include "tests/test_util.h"

namespace optpipe {
namespace {

namespace fs = std::filesystem;
using test_support::run_shell;
using test_support::shell_quote;

std::string script() { return (fs::path(OPTPIPE_SOURCE_DIR) / "scripts" / "gpu_bundle.sh").string(); }
std::string build_dir() { return fs::path(test_support::kCliPath).parent_path().string(); }

// Libraries a GPU machine brings itself (the script's exclusions).
bool brought_by_the_machine(const std::string& name) {
  static const std::regex system(
      R"(^(libc|libm|libdl|librt|libpthread|libgcc_s|libstdc\+\+|ld-linux.*)\.so.*|^libcu.*|^libnccl.*|^libmpi.*|^libopen-.*|^libhwloc.*|^libevent.*|^libpmix.*|^libz\..*|^libudev.*|^libfabric.*|^libuc[pmst].*|^libibverbs.*|^librdma.*|^libnl-.*|^libpsm.*|^libefa.*|^libltdl.*|^libcap.*|^linux-vdso.*)");
  return std::regex_match(name, system);
}

TEST(GpuBundle, HoldsTheBinariesAndEveryLibraryTheMachineLacks) {
  OPTPIPE_REQUIRE_CLI();
  if (run_shell("command -v ldd").status != 0) GTEST_SKIP() << "ldd is not installed";
  const std::string out = test_support::temp_file("bundle", "gpu");
  const auto r = run_shell("OPTPIPE_BUILD_DIR=" + shell_quote(build_dir()) + " " + shell_quote(script()) + " " +
                           shell_quote(out));
  if (!fs::exists(fs::path(build_dir()) / "liboptpipe_cuda.so")) {
    // No CUDA plugin in this build (no nvcc): the script says so and leaves nothing.
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find("liboptpipe_cuda.so is missing"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(out));
    return;
  }
  ASSERT_EQ(r.status, 0) << r.output;
  ASSERT_TRUE(fs::exists(fs::path(out) / "build" / "optpipe"));
  ASSERT_TRUE(fs::exists(fs::path(out) / "build" / "liboptpipe_cuda.so"));
  std::set<std::string> bundled;
  for (const auto& e : fs::directory_iterator(fs::path(out) / "lib")) bundled.insert(e.path().filename().string());
  EXPECT_FALSE(bundled.empty()) << "the build links TBB and spdlog, which a CUDA image lacks";
  // Every library of every bundled binary: in lib/, or brought by the machine.
  int binaries = 0;
  for (const auto& e : fs::recursive_directory_iterator(fs::path(out) / "build")) {
    if (!e.is_regular_file()) continue;
    ++binaries;
    // The broken plugin needs a library that exists nowhere, on purpose (plugins_test.cc).
    if (e.path().filename() == "liboptpipe_test_broken_plugin.so") continue;
    const auto ldd = run_shell("ldd " + shell_quote(e.path().string()));
    ASSERT_EQ(ldd.status, 0) << e.path() << ": " << ldd.output;
    std::istringstream lines(ldd.output);
    for (std::string line; std::getline(lines, line);) {
      std::istringstream words(line);
      std::string name;
      words >> name;
      name = fs::path(name).filename().string();
      if (name.empty() || name.find(".so") == std::string::npos) continue;
      EXPECT_TRUE(bundled.count(name) > 0 || brought_by_the_machine(name))
          << e.path().filename() << " needs " << name << ", which is neither bundled nor brought by the machine";
    }
  }
  EXPECT_GE(binaries, 4) << "the command, the CUDA plugin and the test programs";
  // The bundled command runs with the bundle's libraries first on the path.
  const auto version = run_shell("LD_LIBRARY_PATH=" + shell_quote(out + "/lib") + " " +
                                 shell_quote(out + "/build/optpipe") + " --version");
  EXPECT_EQ(version.status, 0) << version.output;
  EXPECT_FALSE(version.output.empty());
}

TEST(GpuBundle, RefusesAMissingBuildAndLeavesNothing) {
  const std::string out = test_support::temp_file("bundle", "none");
  const auto r = run_shell("OPTPIPE_BUILD_DIR=/nonexistent-optpipe-build " + shell_quote(script()) + " " + shell_quote(out));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("/nonexistent-optpipe-build/optpipe is missing"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out));
  bool stray = false;
  for (const auto& e : fs::directory_iterator(fs::path(out).parent_path())) {
    stray = stray || e.path().filename().string().rfind(fs::path(out).filename().string() + ".tmp", 0) == 0;
  }
  EXPECT_FALSE(stray) << "a half-made bundle was left behind";
}

// OPTPIPE_BUNDLE_PYTHON that is not a Python with pip: refused before anything is made (where
// the build has the CUDA plugin; without it the missing plugin is the refusal).
TEST(GpuBundle, RefusesABundlePythonWithoutPip) {
  OPTPIPE_REQUIRE_CLI();
  const std::string out = test_support::temp_file("bundle", "nopython");
  const auto r = run_shell("OPTPIPE_BUNDLE_PYTHON=/nonexistent/python3 OPTPIPE_BUILD_DIR=" + shell_quote(build_dir()) +
                           " " + shell_quote(script()) + " " + shell_quote(out));
  EXPECT_EQ(r.status, 2) << r.output;
  if (fs::exists(fs::path(build_dir()) / "liboptpipe_cuda.so")) {
    EXPECT_NE(r.output.find("OPTPIPE_BUNDLE_PYTHON=/nonexistent/python3 is not a Python with pip"), std::string::npos)
        << r.output;
  }
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace optpipe
