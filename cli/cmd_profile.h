// `optpipe profile`: measures the reference model's op, copy and message times and writes them
// as an instance for `optpipe solve` (runtime/profiler.h).
#pragma once

#include <CLI/CLI.hpp>

namespace optpipe::cli {

// Registers the `profile` subcommand; it runs from its own callback (CLI::Success on success,
// InputError for bad input).
void add_profile_command(CLI::App& app);

}  // namespace optpipe::cli
