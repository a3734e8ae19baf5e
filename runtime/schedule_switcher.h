// The executor's hook for changing schedules while training runs: at every iteration boundary
// rank 0 asks a ScheduleSwitcher whether to switch, and every rank follows (train.h). The
// runtime only defines the hook; online re-scheduling, which profiles and solves, lives above
// the executor (online/online.h) and is handed in as a factory, so nothing here depends on
// the solver.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "model/instance.h"
#include "model/schedule.h"
#include "runtime/mlp_model.h"

namespace optpipe::runtime {

struct SwitchEvent {
  int iteration = 0;
  double predicted_before = 0, predicted_after = 0;  // makespans on the measured instance (ms)
};

class ScheduleSwitcher {
 public:
  virtual ~ScheduleSwitcher() = default;
  // Rank 0, at the start of `iteration`: the schedule text to switch to, or "" to keep the
  // running schedule.
  virtual std::string decide(int iteration) = 0;
  // Training ended: stop whatever runs in the background and wait for it.
  virtual void finish() = 0;
  virtual std::vector<SwitchEvent> switches() const = 0;
  // What happened, one line each.
  virtual std::vector<std::string> log() const = 0;
};

// Makes rank 0's switcher for a run of `initial` on `instance` with `model` (`synthetic`: the
// run has sleeping ops instead of the model).
using SwitcherFactory = std::function<std::unique_ptr<ScheduleSwitcher>(
    const Instance& instance, const Schedule& initial, const MlpConfig& model, bool synthetic)>;

}  // namespace optpipe::runtime
