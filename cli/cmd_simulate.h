// `optpipe simulate`: simulates a schedule of an instance (model/simulator.h) and prints its
// makespan, bubble and per-device memory, a text Gantt chart, and with --timeline the start
// and end of every action and transfer; with --format json one document with all of that
// (model/validation_json.h).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace optpipe::cli {

struct SimulateArgs {
  std::string instance, schedule;
  bool no_gantt = false, timeline = false;
  int width = 0;
  std::string format = "text";  // or json (docs/json.md)
};

// Registers the `simulate` subcommand on `app` with its flags bound to `args`, which must
// outlive the parse; main runs run_simulate when the returned subcommand was given.
CLI::App* add_simulate_command(CLI::App& app, SimulateArgs& args);

// kOk, or kNegative when the schedule breaks a rule of the lists or deadlocks; bad input
// throws InputError.
int run_simulate(const SimulateArgs& args);

}  // namespace optpipe::cli
