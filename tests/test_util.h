// Helpers shared by the tests: small instance builders, schedules from text, random instances
// and random valid schedules.
#pragma once

#include <filesystem>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "model/instance.h"
#include "model/schedule.h"
#include "model/simulator.h"

#include <gtest/gtest.h>

namespace optpipe::test_support {

inline constexpr double GiB = 1073741824.0;

// p stages on p devices (stage s on device s), equal times, unlimited memory unless `limit`
// (bytes per device, static memory 0) is given.
Instance uniform_instance(int p, int m, double f, double b, double w, double comm = 0.0,
                          double activation = GiB, double weight_activation = GiB / 2, double limit = 1e18);

// Schedule from action texts, one list per device; fails the test on a bad action.
Schedule lists(const Instance& instance, std::initializer_list<std::initializer_list<const char*>> devices);
Schedule lists(const Instance& instance, const std::vector<std::vector<std::string>>& devices);

// An instance of tests/data/relaxation/ by its name without ".json" (the random V, loop and
// offload instances that the relaxations' and the solve pipeline's tests pin).
Instance relaxation_data(const std::string& name);

// The best known schedule of instances/offload-slow-pcie-4x8.json (341.92 ms; found by simulated
// annealing, see tests/offload_witness_test.cc), for `inst` loaded from that file.
Schedule offload_slow_witness(const Instance& inst);

struct RandomInstanceOptions {
  int min_devices = 1, max_devices = 4;
  int min_microbatches = 1, max_microbatches = 6;
  double offloadable_probability = 0.5;
  double split_probability = 0.8;
  bool allow_multi_stage = true;      // V, loop and random placements
  bool tight_memory = false;          // limits between 1 and ~3 activations above static memory
};

Instance random_instance(std::mt19937& rng, const RandomInstanceOptions& options = {});

// V, loop or random placements of 2-3 devices, nothing offloadable, room for 1-3 activations
// (more or less split backward), 2 to `max_microbatches` microbatches, redrawn until some device
// holds several stages: where the device relaxation (bounds/device_relaxation.h) applies.
Instance random_multi_stage(std::mt19937& rng, int max_microbatches);

// A random schedule that passes check_structure(): device lists follow one random topological
// order of all ops (so the lists alone never form a cycle), offloadable F get a random level
// with probability `offload_probability`, and each R is put at a random place between its F
// and its B.
Schedule random_valid_schedule(const Instance& instance, std::mt19937& rng, double offload_probability = 0.3);

// Random per-stage times, activations and comm (same for all stage pairs), in place; memory
// limits and placement are kept.
void randomise_costs(Instance& instance, std::mt19937& rng);

// Every time the simulator adds (F, B, W, offload, reload, comm) rounded to a whole multiple of
// `q` ms, in place: instances with a time quantum (model/time_quantum.h).
void quantize_times(Instance& instance, double q);

// Sets every device's limit to its static memory + `factor` x its largest activation (factor
// 1.05: room for little more than one forward at a time).
void squeeze_memory(Instance& instance, double factor);

// The Zero Bubble paper's bubble ([ZB] §5.3: cost = the longest device span): the largest, over
// devices, of (end of its last compute op - start of its first) - its busy time. R entries are
// requests, not compute, and do not count.
double span_bubble(const Schedule& schedule, const SimResult& sim);

// ---- Running commands (the CLI tests) -------------------------------------------------------

// The optpipe binary the tests run (tests/CMakeLists.txt defines OPTPIPE_CLI_PATH for the test
// targets that run it), or "". Not inline: each file has its own, since only some targets (and
// not the helpers' library) define it.
#ifdef OPTPIPE_CLI_PATH
constexpr const char* kCliPath = OPTPIPE_CLI_PATH;
#else
constexpr const char* kCliPath = "";
#endif
// In a test body: skips the test, saying why, when the optpipe binary is not built.
#define OPTPIPE_REQUIRE_CLI()                                                                   \
  do {                                                                                          \
    if (std::string(optpipe::test_support::kCliPath).empty())                                   \
      GTEST_SKIP() << "the optpipe target is not built";                                        \
    if (!std::filesystem::exists(optpipe::test_support::kCliPath))                              \
      GTEST_SKIP() << "the optpipe binary is missing: " << optpipe::test_support::kCliPath;     \
  } while (false)

struct ShellRun {
  int status = -1;     // exit status; -1 when the command did not exit normally
  std::string output;  // stdout and stderr together
};
// Runs `command` with sh, stdin from /dev/null, capturing stdout and stderr together.
ShellRun run_shell(const std::string& command);
// A program run directly (no shell) with its own resource use: the exit status (-1 when it did
// not exit normally) and its peak resident memory (wait4's ru_maxrss: this child only, not the
// test's other children). Output goes to temp_dir()/measured-N-output.txt, whose text comes back.
struct MeasuredRun {
  int status = -1;
  double max_rss_bytes = 0;
  std::string output;
};
MeasuredRun run_measured(const std::vector<std::string>& argv);
// `s` in single quotes for sh.
std::string shell_quote(const std::string& s);
// The whole file ("" when it cannot be read).
std::string read_text(const std::string& path);
// This test process's folder for temporary files: made on first use in gtest's temp folder
// (optpipe-test-XXXXXX), and removed with everything in it when the process exits normally
// (a process that crashes leaves it behind, to be looked at). Ends with '/'.
const std::string& temp_dir();
// A path in temp_dir(), unique to this call: TAG-N-NAME. Nothing is created there.
std::string temp_file(const std::string& tag, const std::string& name);

// Replays `sch` through the search's decisions (open lists) and calls `at` with the simulator
// state, the decision time and the depth at every decision (the bounds' tests: every node on a
// schedule's path has that schedule as a completion).
template <typename F>
void along_path(const Instance& inst, const Schedule& sch, F&& at) {
  Simulator sim(inst);
  sim.start_open();
  Simulator::Step step = sim.advance();
  std::vector<std::size_t> next(sch.devices.size(), 0);
  int depth = 0;
  while (step.kind == Simulator::Step::Kind::kDecision) {
    at(sim.snapshot(), step.time, depth++);
    ASSERT_LT(next[step.device], sch.devices[step.device].size());
    sim.append(step.device, sch.devices[step.device][next[step.device]++]);
    step = sim.advance();
  }
  ASSERT_EQ(step.kind, Simulator::Step::Kind::kDone);
}

}  // namespace optpipe::test_support
