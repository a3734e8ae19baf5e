// Training runs over the executor (issue 7): lowers a schedule, starts one executor per device
// -- a thread each (`threads`) or this process's rank under mpirun (`mpi`) -- with the reference
// MLP (mlp_model.h) or synthetic sleeping ops, and gathers what every device measured. The CLI's
// `optpipe train` is a thin layer over this.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/instance.h"
#include "model/schedule.h"
#include "runtime/executor.h"
#include "runtime/mlp_model.h"
#include "runtime/schedule_switcher.h"
#include "runtime/stage_model.h"

namespace optpipe::runtime {

struct TrainOptions {
  std::string backend = "threads";  // threads | mpi: how the devices talk (one thread or one rank each)
  std::string device = "cpu";       // cpu | cuda: where they compute (cuda: with mpi, NCCL messages)
  ExecutorOptions executor;
  bool synthetic = false;           // sleeping ops instead of the model
  MlpConfig model;                  // stages and microbatches are taken from the instance
  SwitcherFactory online;  // re-schedule while training (schedule_switcher.h; null: never)
};

struct TrainResult {
  bool root = true;                  // false on MPI ranks other than 0 (they hold no results)
  std::vector<DeviceReport> devices;  // on the root: every device's report, in device order
  std::vector<double> losses;         // per iteration (the last stage's device's)
  std::vector<double> iteration_seconds;  // per iteration: the slowest device
  double simulated_makespan = 0;      // the simulator's makespan of the schedule (instance ms)
  std::vector<double> simulated_peak; // per device, bytes
  std::vector<std::vector<double>> final_parameters;  // per stage, after the last step (threads only)
  std::vector<std::vector<double>> final_gradients;   // per stage, of the last iteration (threads only)
  std::vector<SwitchEvent> switches;  // online: the schedule switches (on the root)
  std::vector<std::string> online_log;  // online: what the background solver did (on the root)
};

// Runs options.executor.iterations iterations of `schedule`. Throws InputError for a schedule
// that does not fit the instance (on every rank), TransportError / runtime_error for failures
// while running (after telling the other ranks).
TrainResult train(const Instance& instance, const Schedule& schedule, const TrainOptions& options);

// The model config used for `instance` (its stages and microbatches on top of options.model).
MlpConfig model_config_for(const Instance& instance, const MlpConfig& base);

}  // namespace optpipe::runtime
