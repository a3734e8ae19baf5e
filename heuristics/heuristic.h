// The interface every baseline schedule implements.
//
// A heuristic turns an instance into per-device action lists (build), or says why it cannot
// (wrong placement, unsplit backward, ...). run_heuristic() then measures the lists with the
// simulator and turns a memory deadlock into a reason a person can act on, e.g.
//   "1F1B needs 4.0 activations on device 0: 52.0 GiB (static 20.0 GiB + 4.0 x 8.00 GiB) > limit 48.0 GiB".
// Heuristics are stateless and thread-safe; statistics of one run come back in the result.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/instance.h"
#include "model/schedule.h"
#include "model/simulator.h"

namespace optpipe {

// Lists from build(): a schedule to measure, or the reason there is none.
struct Built {
  std::optional<Schedule> schedule;
  std::string reason;
  std::string detail;  // optional: which variant a grid search chose, how many candidates, ...

  static Built fail(std::string why) { return Built{std::nullopt, std::move(why), {}}; }
  static Built ok(Schedule s, std::string detail = {}) { return Built{std::move(s), {}, std::move(detail)}; }
};

// How long a heuristic may run and an outside request to stop (e.g. Ctrl-C). A heuristic that
// loops over candidates checks expired() between them and returns the best it has, or fails
// saying it was stopped; the quick fixed patterns ignore it.
struct RunLimits {
  const std::atomic<bool>* stop = nullptr;
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();

  bool expired() const {
    return (stop && stop->load(std::memory_order_relaxed)) || std::chrono::steady_clock::now() >= deadline;
  }
  // The limits with a deadline `seconds` from now (infinity or more than a year: none).
  static RunLimits within(double seconds, const std::atomic<bool>* stop = nullptr);
};

class Heuristic {
 public:
  virtual ~Heuristic() = default;
  virtual std::string name() const = 0;         // CLI name, e.g. "1f1b"
  virtual std::string title() const = 0;        // display name, e.g. "1F1B"
  virtual std::string description() const = 0;  // one line with the source it implements
  virtual Built build(const Instance& instance, const RunLimits& limits) const = 0;
  Built build(const Instance& instance) const { return build(instance, RunLimits{}); }
  // True for heuristics that plan around the memory limit (greedy, offload); false for fixed
  // patterns, whose lists also serve as memory-oblivious starting points.
  virtual bool memory_aware() const { return false; }
  // True for heuristics that search over many candidate schedules, each simulated (PipeOffload's
  // variants, AdaOffload's repair, Waves' k, Periodic's cycles): 1-36 ms each on 8-16-GPU
  // instances, Periodic 60-280 ms, where the fixed patterns take under a millisecond.
  // run_all_heuristics runs them after the others and skips them once one of those meets a
  // lower bound.
  virtual bool searches() const { return false; }
};

// A heuristic's outcome on one instance.
struct HeuristicResult {
  std::string name, title;
  std::optional<Schedule> schedule;  // set when it produced a valid schedule that completes in memory
  std::string reason;                // otherwise: why not
  std::string detail;
  SimResult sim;                     // the simulation of the schedule (when produced)
  double seconds = 0;                // wall time spent

  bool ok() const { return schedule.has_value(); }
};

// Builds, validates and simulates. The returned schedule carries makespan, bubble, peak memory,
// status "feasible" and solver "heuristic <title>".
HeuristicResult run_heuristic(const Heuristic& heuristic, const Instance& instance, const RunLimits& limits = {});

// Why `schedule` (valid lists that deadlock for memory) does not fit, in the form above: it is
// re-simulated without memory limits to find what each device would need.
std::string memory_shortfall(const std::string& title, const Instance& instance, const Schedule& schedule);

}  // namespace optpipe
