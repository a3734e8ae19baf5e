// `optpipe plan` as a library call (issue 22, part 3): every option of the option space
// (option_space.h) screened cheaply (option_screen.h), the promising ones solved briefly by the
// solve pipeline (solve/solve_pipeline.h), the best few given the partition search
// (partition/partition_search.h), and every option's time per global batch (option_costs.h).
//
// The run, under one time limit:
//   1. screen every option: its starting split, its memory floor against the limit, its lower
//      bound on the time per global batch. Options over the limit are not solved (no schedule
//      exists: the floor is exact). When no option fits, NothingFits names the closest;
//   2. first pass, best-first (branch-and-bound over the options, Land and Doig 1960): the
//      options that fit in increasing order of their bound; an option whose bound reaches the
//      best time found so far cannot beat it and is cut (so is a solve whose own bound reaches
//      it: cutoff_solve.h). Each solve gets an equal share of the pass's time among the options
//      still below the best time, at least min_solve_seconds and at most a quarter of the pass;
//      then the same pass within each placement, with that placement's best time as the cut,
//      so that the table compares the best of each (one stage per device, V, loop). These
//      passes have 1 - partition_share of the time left after screening (60% of it the first);
//   3. second pass: the partition search on the partition_top best solved options (their
//      layers per stage chosen jointly with the schedule), the rest of the time in equal shares;
//      a split that gives a shorter time per batch replaces the option's;
//   4. the options best first: solved by time per batch, then the others by bound, then those
//      over the memory limit by how far.
// With exact solves the best option is the best of all options with their starting splits (the
// cuts only drop options whose lower bound reaches it), and the second pass only improves it.
// The stop flag ends the solve under way with its best schedule and skips what is left.
// Cost: screening O(options x S) (plus the enumeration for options whose default split does not
// fit); then the solves, within the time limit.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/instance.h"
#include "model/schedule.h"
#include "plan/bottleneck.h"
#include "plan/option_screen.h"
#include "plan/option_space.h"

namespace optpipe::plan {

struct PlanOptions {
  double time_limit = 120;            // seconds for everything
  int threads = 0;                    // solver threads (0: all)
  const std::atomic<bool>* stop = nullptr;
  std::function<void(const std::string&)> progress;  // one line per step (the CLI prints it on stderr)
  int partition_top = 2;              // options given the partition search in the second pass
  double partition_share = 0.3;       // of the time left after screening, for the second pass
  bool screens = true;                // false: solve every option that fits, whatever its bound (tests)
  double min_solve_seconds = 0.25;
  std::int64_t node_limit = 200000;   // per option whose default split does not fit
};

struct OptionResult {
  Screened screen;
  std::string state;                  // "solved", "cut by bound", "over memory", "not solved: time limit", "no schedule"
  bool solved = false;
  std::vector<int> split;             // the split of its schedule (after the partition search, if any)
  std::string split_role;
  double makespan = std::numeric_limits<double>::infinity();
  double makespan_bound = 0;          // the solve's bound, at least the cheap bound
  std::string status;                 // the solve's: optimal, feasible
  double seconds = 0;                 // solve (and partition search) wall time
  double time = std::numeric_limits<double>::infinity();  // per global batch, ms
  double time_bound = 0;              // lower bound on it, ms
  double tokens_per_second = 0;
  double peak = 0, limit = 0;         // the highest device peak and the limit, bytes
  int peak_device = -1;
  int offloads = 0;                   // forwards that offload in the schedule
  double sync = 0;                    // the largest per-device DP synchronisation, ms
  Bottleneck bottleneck;
  std::string note;                   // e.g. why its solve stopped early
  std::string partition_note;         // what the partition search did, when it ran
  std::optional<Instance> instance;   // solved: its instance and schedule
  std::optional<Schedule> schedule;

  const PlanOption& option() const { return screen.option; }
};

struct PlanResult {
  std::vector<OptionResult> options;  // best first (see above)
  int best = -1;                      // index into options (0 when anything was solved)
  int enumerated = 0, fitting = 0, solved = 0, cut = 0, over_memory = 0, unsolved = 0;
  std::vector<std::string> left_out;  // combinations not enumerated, with the reason
  double seconds = 0;
  bool stopped = false;               // the stop flag ended it early
};

// No option fits the memory limit; what() names the closest option, the stage whose floor is the
// problem and by how much (the CLI exits 1 with it).
class NothingFits : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws InputError for a request without options (option_space.h), NothingFits when none fits.
PlanResult run_plan(const PlanRequest& request, const PlanOptions& options);

}  // namespace optpipe::plan
