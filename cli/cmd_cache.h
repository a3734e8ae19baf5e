// `optpipe cache list|show|prune|export|import`: look after the schedule cache (cache/).
#pragma once

#include <CLI/CLI.hpp>

namespace optpipe::cli {

// Registers the `cache` subcommand on `app`. Each action runs from its own callback and ends
// the parse with CLI::Success (exit 0); an unusable cache file or a bad argument throws
// InputError (exit 2, the message names the file and the problem).
void add_cache_command(CLI::App& app);

}  // namespace optpipe::cli
