// Online re-scheduling while training runs (issue 8; the framework of the OptPipe paper,
// arXiv 2510.05186, §3 as reconstructed in ../shared/background/optpipe-paper.md): start with a
// schedule that fits, profile after a few iterations, let the solver improve the schedule in the
// background, and switch to each better one at an iteration boundary without stopping training.
//
//   - Rank 0 owns an OnlineCoordinator. After `profile_iterations` iterations it profiles the
//     stage model (profiler.h) into a measured instance and starts the solver (search/)
//     in a background thread on it (solve/solve_pipeline.h), warm-started from the running schedule.
//   - At every iteration boundary every rank takes part in one broadcast from rank 0: empty (keep
//     the program) or a schedule's text. Rank 0 sends a schedule when the solver's is predicted
//     (simulated on the measured instance) to be faster than the running one by more than
//     `switch_threshold`, and when it runs on the instance the executor accounts memory in (it
//     must pass lower_schedule on it). Every rank lowers it and runs its program from that
//     iteration on: all ranks switch at the same iteration.
//   - Losses do not change: W accumulates each stage's gradients in microbatch order under every
//     schedule (FIFO per stage and type), so a switch changes the timing only.
//   - The solver runs under its own time limit and a stop flag that training sets when it ends;
//     training never waits for it (unless `wait_for_solver`, for reproducible runs and tests).
#pragma once

#include <atomic>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "model/instance.h"
#include "model/schedule.h"
#include "runtime/mlp_model.h"
#include "runtime/schedule_switcher.h"

namespace optpipe::runtime {

struct OnlineOptions {
  int profile_iterations = 2;     // profile and start the solver after this many iterations
  double switch_threshold = 0.02; // switch when the predicted makespan improves by more than this share
  double solver_seconds = 10;     // the background solver's time limit
  bool wait_for_solver = false;   // rank 0 waits for the solver at the boundary after profiling
  bool synthetic = false;         // no model to profile: the solver works on the instance itself
};

class OnlineCoordinator final : public ScheduleSwitcher {
 public:
  OnlineCoordinator(const Instance& instance, const Schedule& initial, const MlpConfig& model, OnlineOptions options);
  ~OnlineCoordinator() override;  // stops and joins the solver
  OnlineCoordinator(const OnlineCoordinator&) = delete;
  OnlineCoordinator& operator=(const OnlineCoordinator&) = delete;

  // Rank 0, at the start of `iteration`: the schedule text to switch to, or "" to keep the
  // running schedule.
  std::string decide(int iteration) override;
  // Stops the solver (training ended) and waits for it.
  void finish() override;

  std::vector<SwitchEvent> switches() const override { return switches_; }
  // What happened, one line each (profiling, the solver's result, why a schedule was not taken).
  std::vector<std::string> log() const override;

 private:
  void solve_in_background();

  Instance inst_;
  Schedule current_;
  MlpConfig model_;
  OnlineOptions opt_;
  std::atomic<bool> stop_{false};
  std::thread solver_;
  bool started_ = false, waited_ = false;
  mutable std::mutex mu_;
  std::optional<Schedule> candidate_;  // the solver's schedule, when it ran on inst_
  double predicted_current_ = 0, predicted_candidate_ = 0;
  std::vector<SwitchEvent> switches_;
  std::vector<std::string> log_;
};

// The factory train() takes (TrainOptions::online): an OnlineCoordinator with `options`, its
// `synthetic` set from the run.
SwitcherFactory online_rescheduling(OnlineOptions options);

}  // namespace optpipe::runtime
