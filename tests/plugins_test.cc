// The core without CUDA and MPI (plugins/plugin_loader.h): the `optpipe` binary needs none of
// the CUDA, cuBLAS, NCCL or MPI libraries (its ELF DT_NEEDED entries), starts in a few MB, and
// loads the CUDA and MPI plugins only when a command asks for them; a plugin that cannot be
// loaded is a clear input error naming what was asked, the file and dlopen's reason, and
// `--bounds auto` falls back to the CPU quietly. Runs the built binary, like cli_test.cc.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/cuda_devices.h"
#include "tests/sanitized.h"
#include "tests/test_paths.h"
#include "tests/test_util.h"

namespace optpipe {
namespace {

constexpr const char* kCli = optpipe::test_support::kCliPath;
#define REQUIRE_CLI() OPTPIPE_REQUIRE_CLI()

using optpipe::test_support::ShellRun;

std::string quote(const std::string& s) { return optpipe::test_support::shell_quote(s); }
ShellRun sh(const std::string& command) { return optpipe::test_support::run_shell(command); }
std::string instance(const std::string& name) { return std::string(OPTPIPE_SOURCE_DIR) + "/instances/" + name + ".json"; }
// The plugins are built beside the command (plugin_modules/CMakeLists.txt).
std::string beside_cli(const std::string& file) { return std::filesystem::path(kCli).parent_path() / file; }

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }
#define EXPECT_CONTAINS(text, part) EXPECT_TRUE(contains(text, part)) << "\"" << (part) << "\" not in:\n" << (text)

// The shared libraries an ELF file names in its DT_NEEDED entries (readelf -d), in order; a
// check of the file itself, not of what the loader would find (ldd).
std::vector<std::string> needed(const std::string& file) {
  const ShellRun r = sh("readelf -d " + quote(file));
  EXPECT_EQ(r.status, 0) << r.output;
  std::vector<std::string> out;
  const std::regex entry(R"(\(NEEDED\)\s+Shared library: \[([^\]]+)\])");
  std::istringstream in(r.output);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, entry)) out.push_back(m[1]);
  }
  return out;
}

// The libraries of `libs` that belong to CUDA, NCCL, MPI or what MPI brings (hwloc, PMIx).
std::vector<std::string> cuda_or_mpi(const std::vector<std::string>& libs) {
  const std::regex heavy(R"(^lib(cuda|cudart|cublas|cublasLt|nccl|mpi|mpi_cxx|open-pal|open-rte|hwloc|pmix)[._-])");
  std::vector<std::string> out;
  for (const auto& l : libs) {
    if (std::regex_search(l, heavy)) out.push_back(l);
  }
  return out;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}

TEST(Plugins, TheCommandNeedsNoCudaNcclOrMpiLibrary) {
  REQUIRE_CLI();
  const std::vector<std::string> libs = needed(kCli);
  ASSERT_FALSE(libs.empty()) << "readelf found no DT_NEEDED entry in " << kCli;
  EXPECT_TRUE(cuda_or_mpi(libs).empty()) << "optpipe needs " << joined(cuda_or_mpi(libs)) << " (all: " << joined(libs) << ")";
  std::printf("[ needed   ] optpipe: %s\n", joined(libs).c_str());
  // The same check finds them in the plugins, which is where they belong.
#ifdef OPTPIPE_HAVE_CUDA_PLUGIN
  const auto cuda = needed(beside_cli("liboptpipe_cuda.so"));
  EXPECT_CONTAINS(joined(cuda_or_mpi(cuda)), "libcudart.so");
  std::printf("[ needed   ] liboptpipe_cuda.so: %s\n", joined(cuda).c_str());
#endif
#ifdef OPTPIPE_HAVE_MPI_PLUGIN
  const auto mpi = needed(beside_cli("liboptpipe_mpi.so"));
  EXPECT_CONTAINS(joined(cuda_or_mpi(mpi)), "libmpi.so");
  std::printf("[ needed   ] liboptpipe_mpi.so: %s\n", joined(mpi).c_str());
#endif
}

// Peak resident memory of `optpipe --help` (getrusage of the child): it was 225 MB when the
// command linked CUDA, cuBLAS, NCCL and MPI (2026-11-25, the 2-core development machine).
TEST(Plugins, HelpRunsInAFewMegabytes) {
  SKIP_UNDER_SANITIZERS("it measures resident memory, which ASan's shadow memory inflates (86 MiB)");
  REQUIRE_CLI();
  const test_support::MeasuredRun r = test_support::run_measured({kCli, "--help"});
  EXPECT_EQ(r.status, 0) << r.output;
  const double mb = r.max_rss_bytes / 1048576.0;
  std::printf("[ rss      ] optpipe --help: %.1f MiB peak resident\n", mb);
  EXPECT_GT(mb, 0.0);
  EXPECT_LT(mb, 30.0);
}

TEST(Plugins, GpuBoundsWithoutTheCudaPluginSayWhyAndAutoFallsBackToTheCpu) {
  REQUIRE_CLI();
  const std::string env = "OPTPIPE_CUDA_PLUGIN=/nonexistent/liboptpipe_cuda.so ";
  const std::string solve = quote(kCli) + " solve " + quote(instance("tiny-2x3")) + " --no-cache --time-limit 5";
  const ShellRun gpu = sh(env + solve + " --bounds gpu");
  EXPECT_EQ(gpu.status, 2) << gpu.output;
  EXPECT_CONTAINS(gpu.output, "--bounds gpu: the CUDA plugin OPTPIPE_CUDA_PLUGIN=/nonexistent/liboptpipe_cuda.so cannot be loaded");
  EXPECT_CONTAINS(gpu.output, "cannot open shared object file");
  const ShellRun autob = sh(env + solve + " --bounds auto");
  EXPECT_EQ(autob.status, 0) << autob.output;
  EXPECT_CONTAINS(autob.output, "status optimal");
  EXPECT_CONTAINS(autob.output, "bounds on tbb");
  const ShellRun devices = sh(env + quote(kCli) + " devices");
  EXPECT_EQ(devices.status, 0) << devices.output;
  EXPECT_CONTAINS(devices.output, "CUDA: the CUDA plugin OPTPIPE_CUDA_PLUGIN=/nonexistent/liboptpipe_cuda.so cannot be loaded");
  const ShellRun train = sh(env + quote(kCli) + " train " + quote(instance("tiny-2x3")) + " --backend cuda");
  EXPECT_EQ(train.status, 2) << train.output;
  EXPECT_CONTAINS(train.output, "--backend cuda: the CUDA plugin OPTPIPE_CUDA_PLUGIN=/nonexistent/liboptpipe_cuda.so");
}

TEST(Plugins, AFileThatIsNoPluginIsRefusedByName) {
  REQUIRE_CLI();
  // libm is on every machine and has no optpipe_cuda_plugin_v1.
  const ShellRun r = sh("OPTPIPE_CUDA_PLUGIN=libm.so.6 " + quote(kCli) + " solve " + quote(instance("tiny-2x3")) +
                        " --no-cache --bounds gpu");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_CONTAINS(r.output, "OPTPIPE_CUDA_PLUGIN=libm.so.6 is not an OptPipe CUDA plugin: it has no optpipe_cuda_plugin_v1");
}

// A plugin that is there but whose own libraries are not (a CUDA plugin without libcudart): the
// error names the plugin and the missing library.
TEST(Plugins, APluginWhoseLibrariesAreMissingNamesThem) {
  REQUIRE_CLI();
  const std::string plugin = OPTPIPE_BROKEN_PLUGIN;
  const ShellRun r = sh("OPTPIPE_CUDA_PLUGIN=" + quote(plugin) + " " + quote(kCli) + " solve " +
                        quote(instance("tiny-2x3")) + " --no-cache --bounds gpu");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_CONTAINS(r.output, "--bounds gpu: the CUDA plugin OPTPIPE_CUDA_PLUGIN=" + plugin + " cannot be loaded: ");
  EXPECT_CONTAINS(r.output, "liboptpipe_test_gone.so: cannot open shared object file");
}

// A CUDA plugin from another build (another version or compiler) is refused, naming both tags.
TEST(Plugins, APluginFromAnotherBuildIsRefused) {
  REQUIRE_CLI();
  const std::string plugin = OPTPIPE_FOREIGN_PLUGIN;
  const ShellRun r = sh("OPTPIPE_CUDA_PLUGIN=" + quote(plugin) + " " + quote(kCli) + " devices");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_CONTAINS(r.output, "OPTPIPE_CUDA_PLUGIN=" + plugin + " was built for another OptPipe: version 1, ABI 'optpipe 0.0.1, another compiler'; this binary wants version 1, ABI 'optpipe ");
}

// The plugin this build made loads (the CUDA libraries are installed); without a GPU (or its
// driver) it says there is no CUDA device and --bounds gpu is refused; with one it lists the
// devices and --bounds gpu solves.
TEST(Plugins, TheBuiltCudaPluginLoadsAndReportsTheDevices) {
  REQUIRE_CLI();
#ifndef OPTPIPE_HAVE_CUDA_PLUGIN
  const ShellRun none = sh(quote(kCli) + " devices");
  EXPECT_CONTAINS(none.output, "no CUDA plugin");
  GTEST_SKIP() << "this build has no CUDA plugin (no nvcc)";
#else
  const ShellRun devices = sh(quote(kCli) + " devices");
  EXPECT_EQ(devices.status, 0) << devices.output;
  EXPECT_CONTAINS(devices.output, "CUDA plugin: " + beside_cli("liboptpipe_cuda.so") + " (CUDA runtime ");
  const std::size_t count = query_cuda_devices().devices.size();
  const ShellRun gpu = sh(quote(kCli) + " solve " + quote(instance("tiny-2x3")) + " --no-cache --bounds gpu");
  if (count == 0) {
    EXPECT_CONTAINS(devices.output, "CUDA: no CUDA device: ");
    EXPECT_EQ(gpu.status, 2) << gpu.output;
    EXPECT_CONTAINS(gpu.output, "--bounds gpu: no CUDA device: ");
  } else {  // scripts/gpu_check.sh
    EXPECT_CONTAINS(devices.output, "CUDA: " + std::to_string(count) + " CUDA device");
    EXPECT_CONTAINS(devices.output, "GPU 0: ");
    EXPECT_EQ(gpu.status, 0) << gpu.output;
    EXPECT_CONTAINS(gpu.output, "status optimal");
  }
#endif
}

}  // namespace
}  // namespace optpipe
