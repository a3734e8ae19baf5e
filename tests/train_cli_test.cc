// `optpipe train` end to end: one thread per device, and one MPI process per device under
// mpirun (the CPU backend as it runs across machines). The mpirun tests skip, saying why, when
// Open MPI is not installed (scripts/setup.sh installs it).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "tests/test_paths.h"
#include "tests/test_util.h"

namespace optpipe {
namespace {

constexpr const char* kCli = optpipe::test_support::kCliPath;
#define REQUIRE_CLI() OPTPIPE_REQUIRE_CLI()

using optpipe::test_support::ShellRun;

ShellRun sh(const std::string& command) { return optpipe::test_support::run_shell(command); }

std::string cli() { return std::string("'") + kCli + "'"; }
std::string instance(const std::string& name) { return std::string(OPTPIPE_SOURCE_DIR) + "/instances/" + name + ".json"; }

// mpirun as root needs Open MPI's consent; --oversubscribe allows more ranks than cores.
std::string mpirun(int ranks) {
  return "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 mpirun -np " +
         std::to_string(ranks) + " ";
}

// The same, ended by `timeout` after `seconds` (status 124) if it hangs.
std::string mpirun_within(int seconds, int ranks) {
  std::string m = mpirun(ranks);
  return m.insert(m.find("mpirun -np"), "timeout " + std::to_string(seconds) + " ");
}

bool have_mpirun() { return std::system("command -v mpirun > /dev/null 2>&1") == 0; }

std::string schedule_of(const std::string& inst, const std::string& heuristic) {
  const std::string path = optpipe::test_support::temp_dir() + "train-" + heuristic + ".json";
  const ShellRun r = sh(cli() + " schedule " + instance(inst) + " --heuristic " + heuristic + " -o '" + path + "'");
  EXPECT_EQ(r.status, 0) << r.output;
  return path;
}

std::vector<std::string> losses(const std::string& output) {
  std::vector<std::string> out;
  const std::regex row(R"(^\s+\d+\s+([0-9.]+)\s+[0-9.]+$)");
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, row)) out.push_back(m[1]);
  }
  return out;
}

#define REQUIRE_MPIRUN() \
  if (!have_mpirun()) GTEST_SKIP() << "mpirun is not installed (Debian openmpi-bin; scripts/setup.sh installs it)"

TEST(TrainCli, ThreadsAndMpiRanksGiveTheSameLosses) {
  REQUIRE_CLI();
  REQUIRE_MPIRUN();
  const std::string sch = schedule_of("uniform-4x8", "zb-h1");
  const ShellRun threads = sh(cli() + " train " + instance("uniform-4x8") + " '" + sch + "' --iterations 5");
  ASSERT_EQ(threads.status, 0) << threads.output;
  EXPECT_NE(threads.output.find("(threads)"), std::string::npos) << threads.output;
  const ShellRun mpi = sh(mpirun(4) + cli() + " train " + instance("uniform-4x8") + " '" + sch + "' --iterations 5");
  ASSERT_EQ(mpi.status, 0) << mpi.output;
  EXPECT_NE(mpi.output.find("(MPI ranks)"), std::string::npos) << mpi.output;
  const auto a = losses(threads.output), b = losses(mpi.output);
  ASSERT_EQ(a.size(), 5u) << threads.output;
  EXPECT_EQ(a, b) << mpi.output;
  EXPECT_LT(std::stod(a.back()), std::stod(a.front()));
}

// Sleeping ops under mpirun: the measured iteration time is within 10% of the simulator's
// makespan (scaled), for a plain and an offloading schedule. Runs alone (RUN_SERIAL).
TEST(TrainCliTiming, MpiIterationTimeMatchesTheSimulatedMakespan) {
  REQUIRE_CLI();
  REQUIRE_MPIRUN();
  for (const auto& [inst, heuristic] : {std::pair{"uniform-4x8", "1f1b"}, {"offload-fast-pcie-4x8", "pipe-offload"}}) {
    const std::string sch = schedule_of(inst, heuristic);
    const ShellRun r = sh(mpirun(4) + cli() + " train " + instance(inst) + " '" + sch +
                     "' --synthetic --time-scale 1 --iterations 4");
    ASSERT_EQ(r.status, 0) << r.output;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.output, m, std::regex(R"(\(([-+][0-9.]+)%\))"))) << r.output;
    const double off = std::stod(m[1]);
    std::printf("[ train    ] %s %s under mpirun: %+.1f%% from the simulated makespan\n", inst, heuristic, off);
    EXPECT_LT(std::abs(off), 10.0) << r.output;
  }
}

TEST(TrainCli, WrongRankCountAnotherInstancesScheduleAndCudaAreClearErrors) {
  REQUIRE_CLI();
  const std::string sch = schedule_of("uniform-4x8", "1f1b");
  const ShellRun other = sh(cli() + " train " + instance("hetero-4x8") + " '" + sch + "'");
  EXPECT_EQ(other.status, 2) << other.output;
  EXPECT_NE(other.output.find("uniform-4x8"), std::string::npos) << other.output;
  const ShellRun cuda = sh(cli() + " train " + instance("uniform-4x8") + " '" + sch + "' --backend cuda");
  EXPECT_EQ(cuda.status, 2) << cuda.output;
  EXPECT_NE(cuda.output.find("cuda"), std::string::npos) << cuda.output;
  if (!have_mpirun()) GTEST_SKIP() << "mpirun is not installed: the rank-count case is not checked";
  const ShellRun ranks = sh(mpirun(3) + cli() + " train " + instance("uniform-4x8") + " '" + sch + "' --iterations 1");
  EXPECT_NE(ranks.status, 0) << ranks.output;
  EXPECT_NE(ranks.output.find("mpirun -np 4"), std::string::npos) << ranks.output;
}

// Failure drills (issue 20): a rank that fails in the middle of an iteration stops every other
// rank with an error naming it, long before the 60 s wait timeout, never a hang. `timeout 120`
// turns a hang into a failure (status 124) instead of a stuck test.
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(TrainCliDrill, ARankThatFailsUnderThreadsStopsTheOthersNamingIt) {
  REQUIRE_CLI();
  const std::string sch = schedule_of("uniform-4x8", "1f1b");
  const auto t0 = std::chrono::steady_clock::now();
  const ShellRun r = sh("OPTPIPE_FAULT=device=2,iteration=1,step=5 timeout 120 " + cli() + " train " +
                        instance("uniform-4x8") + " '" + sch + "' --iterations 3 --timeout 60");
  const double seconds = seconds_since(t0);
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_NE(r.status, 124) << "hung:\n" << r.output;
  EXPECT_EQ(r.status, 3) << r.output;  // the run failed (not bad input, not a crash)
  EXPECT_NE(r.output.find("optpipe: error: train: device 2: failure drill"), std::string::npos) << r.output;
  EXPECT_LT(seconds, 30.0) << r.output;  // the others stopped on the abort, not on their timeouts
  // A malformed drill is refused before anything runs.
  const ShellRun bad = sh("OPTPIPE_FAULT=device=two " + cli() + " train " + instance("uniform-4x8") + " '" + sch + "'");
  EXPECT_EQ(bad.status, 2) << bad.output;
  EXPECT_NE(bad.output.find("OPTPIPE_FAULT"), std::string::npos) << bad.output;
}

TEST(TrainCliDrill, ARankThatFailsUnderMpirunStopsTheOthersNamingIt) {
  REQUIRE_CLI();
  REQUIRE_MPIRUN();
  const std::string sch = schedule_of("uniform-4x8", "1f1b");
  const auto t0 = std::chrono::steady_clock::now();
  const ShellRun r = sh("OPTPIPE_FAULT=device=2,iteration=1,step=5 " + mpirun_within(120, 4) + cli() + " train " +
                        instance("uniform-4x8") + " '" + sch + "' --iterations 3 --timeout 60");
  const double seconds = seconds_since(t0);
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_NE(r.status, 124) << "hung:\n" << r.output;
  EXPECT_NE(r.output.find("rank 2 failed: device 2: failure drill"), std::string::npos) << r.output;
  EXPECT_LT(seconds, 30.0) << r.output;
}

TEST(TrainCliDrill, ARankKilledUnderMpirunStopsTheOthers) {
  REQUIRE_CLI();
  REQUIRE_MPIRUN();
  const std::string sch = schedule_of("uniform-4x8", "1f1b");
  const auto t0 = std::chrono::steady_clock::now();
  const ShellRun r = sh("OPTPIPE_FAULT=device=1,iteration=1,step=3,kind=kill " + mpirun_within(120, 4) + cli() +
                        " train " + instance("uniform-4x8") + " '" + sch + "' --iterations 3 --timeout 60");
  const double seconds = seconds_since(t0);
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_NE(r.status, 124) << "hung:\n" << r.output;
  // The rank dies without a word of its own beyond the drill's; mpirun names it.
  EXPECT_NE(r.output.find("device 1: failure drill"), std::string::npos) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("rank 1\\b"))) << r.output;
  EXPECT_LT(seconds, 30.0) << r.output;
}

// The MPI transport is a plugin (liboptpipe_mpi.so): threads never load it, so they run with it
// gone; under mpirun a missing plugin is an input error naming it, on every rank.
TEST(TrainCli, ThreadsNeedNoMpiPluginAndMpirunNamesAMissingOne) {
  REQUIRE_CLI();
  const std::string sch = schedule_of("uniform-4x8", "1f1b");
  const std::string hidden = "OPTPIPE_MPI_PLUGIN=/nonexistent/liboptpipe_mpi.so ";
  const ShellRun threads = sh(hidden + cli() + " train " + instance("uniform-4x8") + " '" + sch + "' --iterations 2");
  EXPECT_EQ(threads.status, 0) << threads.output;
  EXPECT_NE(threads.output.find("(threads)"), std::string::npos) << threads.output;
  EXPECT_EQ(losses(threads.output).size(), 2u) << threads.output;
  REQUIRE_MPIRUN();
  const ShellRun ranks = sh(hidden + mpirun(4) + cli() + " train " + instance("uniform-4x8") + " '" + sch + "' --iterations 1");
  EXPECT_NE(ranks.status, 0) << ranks.output;
  EXPECT_NE(ranks.output.find("train under mpirun: the MPI plugin OPTPIPE_MPI_PLUGIN=/nonexistent/liboptpipe_mpi.so cannot be loaded"),
            std::string::npos)
      << ranks.output;
}

// The CUDA/NCCL backend: one MPI rank per GPU, the same losses as the CPU backend. Needs as
// many GPUs as the instance has devices (NCCL does not put two ranks on one GPU).
TEST(TrainCli, CudaBackendGivesTheCpuLosses) {
  REQUIRE_CLI();
  REQUIRE_MPIRUN();
  const ShellRun gpus = sh("nvidia-smi -L 2>/dev/null | grep -c GPU");
  const int count = gpus.status == 0 ? std::atoi(gpus.output.c_str()) : 0;
  if (count < 2) GTEST_SKIP() << "needs 2 GPUs for a 2-device pipeline, found " << count;
  const std::string sch = schedule_of("tiny-2x3", "1f1b");
  const ShellRun cpu = sh(cli() + " train " + instance("tiny-2x3") + " '" + sch + "' --iterations 3 --dtype float");
  const ShellRun gpu =
      sh(mpirun(2) + cli() + " train " + instance("tiny-2x3") + " '" + sch + "' --iterations 3 --dtype float --backend cuda");
  ASSERT_EQ(gpu.status, 0) << gpu.output;
  const auto a = losses(cpu.output), b = losses(gpu.output);
  ASSERT_EQ(a.size(), b.size()) << gpu.output;
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(std::stod(a[i]), std::stod(b[i]), 1e-4 * std::stod(a[i]));
}

// Online under mpirun: every rank switches at the same iteration and the losses are those of a
// run that never switches.
TEST(TrainCli, OnlineSwitchUnderMpiKeepsTheLosses) {
  REQUIRE_CLI();
  REQUIRE_MPIRUN();
  const std::string sch = schedule_of("uniform-4x8", "gpipe");
  const std::string base = cli() + " train " + instance("uniform-4x8") + " '" + sch + "' --iterations 6";
  const ShellRun still = sh(mpirun(4) + base);
  ASSERT_EQ(still.status, 0) << still.output;
  const ShellRun moved =
      sh(mpirun(4) + base + " --online --profile-iterations 2 --switch-threshold 0 --solver-time 3 --wait-for-solver");
  ASSERT_EQ(moved.status, 0) << moved.output;
  EXPECT_NE(moved.output.find("switched at iteration 2"), std::string::npos) << moved.output;
  EXPECT_EQ(losses(moved.output), losses(still.output)) << moved.output;
}

// Without a schedule file, training starts from the cache's schedule or the best heuristic's.
TEST(TrainCli, WithoutAScheduleTheBestHeuristicStarts) {
  REQUIRE_CLI();
  const std::string cache = optpipe::test_support::temp_dir() + "train-cache.sqlite";
  const ShellRun r = sh("OPTPIPE_CACHE='" + cache + "' " + cli() + " train " + instance("uniform-4x8") + " --iterations 2");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("starting from the best heuristic"), std::string::npos) << r.output;
  EXPECT_EQ(losses(r.output).size(), 2u) << r.output;
  if (!have_mpirun()) GTEST_SKIP() << "mpirun is not installed: the MPI case is not checked";
  // Under mpirun every rank takes the same (deterministic) heuristic schedule, never the cache.
  const ShellRun m =
      sh("OPTPIPE_CACHE='" + cache + "' " + mpirun(4) + cli() + " train " + instance("uniform-4x8") + " --iterations 2");
  ASSERT_EQ(m.status, 0) << m.output;
  EXPECT_EQ(losses(m.output), losses(r.output)) << m.output;
}

TEST(TrainCli, ProfileWritesAnInstanceThatValidatesAndSolves) {
  REQUIRE_CLI();
  const std::string out = optpipe::test_support::temp_dir() + "profile.json";
  const ShellRun p = sh(cli() + " profile " + instance("uniform-4x8") + " --repeats 3 --width 8 -o '" + out + "'");
  ASSERT_EQ(p.status, 0) << p.output;
  EXPECT_NE(p.output.find("F ms"), std::string::npos) << p.output;
  const ShellRun v = sh(cli() + " validate '" + out + "'");
  EXPECT_EQ(v.status, 0) << v.output;
  EXPECT_NE(v.output.find("uniform-4x8-measured"), std::string::npos) << v.output;
  const ShellRun s = sh(cli() + " solve '" + out + "' --time-limit 2 -q");
  EXPECT_EQ(s.status, 0) << s.output;
  const ShellRun bad = sh(cli() + " profile /nonexistent.json");
  EXPECT_EQ(bad.status, 2) << bad.output;
}

// A schedule file edited by hand into a deadlock (each device waits for the other's next op) is
// refused by train before anything runs, with the reason: who waits for what.
TEST(TrainCli, RefusesAHandEditedDeadlockBeforeItStarts) {
  REQUIRE_CLI();
  const std::string path = optpipe::test_support::temp_dir() + "train-deadlock.json";
  {
    std::ofstream out(path);
    out << R"({"format": "optpipe-schedule/1", "instance": "tiny-2x3", "devices": [
      ["F0.0", "B0.0", "W0.0", "F0.1", "B0.1", "W0.1", "F0.2", "B0.2", "W0.2"],
      ["F1.0", "F1.1", "B1.0", "W1.0", "B1.1", "W1.1", "F1.2", "B1.2", "W1.2"]]})";
  }
  const ShellRun r = sh(cli() + " train " + instance("tiny-2x3") + " '" + path + "' --iterations 2 2>&1");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("deadlock"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("device 0 waits at B0.0 (position 1) for B1.0 (device 1)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("device 1 waits at F1.1 (position 1) for F0.1 (device 0)"), std::string::npos) << r.output;
  EXPECT_TRUE(losses(r.output).empty()) << r.output;  // no iteration ran
}

}  // namespace
}  // namespace optpipe
