// `optpipe heuristics`: lists the baseline heuristics (heuristics/registry.h) by the names
// `optpipe schedule --heuristic` takes, each with its description. It has no flags.
#pragma once

#include <CLI/CLI.hpp>

namespace optpipe::cli {

// Registers the `heuristics` subcommand on `app`; main runs run_heuristics when the returned
// subcommand was given.
CLI::App* add_heuristics_command(CLI::App& app);

// Prints the list; kOk.
int run_heuristics();

}  // namespace optpipe::cli
