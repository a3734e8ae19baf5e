// `optpipe schedule`: a schedule from one baseline heuristic, or from all of them in parallel
// keeping the best that fits (heuristics/registry.h); prints their table and the chosen
// schedule's summary, and saves it as JSON and an SVG chart; with --format json one document
// with the table, the chosen schedule's simulation and the schedule (heuristics/heuristics_json.h).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace optpipe::cli {

struct ScheduleArgs {
  std::string instance, heuristic = "best", output, svg;
  bool gantt = false, verbose = false, sequential = false;
  std::string format = "text";  // or json (docs/json.md)
};

// Registers the `schedule` subcommand on `app` with its flags bound to `args`, which must
// outlive the parse; main runs run_schedule when the returned subcommand was given.
CLI::App* add_schedule_command(CLI::App& app, ScheduleArgs& args);

// kOk, or kNegative when the instance obviously cannot fit or no heuristic schedule fits; bad
// input throws InputError.
int run_schedule(const ScheduleArgs& args);

}  // namespace optpipe::cli
