// `optpipe frontier`: the memory-time frontier of an instance (frontier/frontier.h) as a table
// on stdout, JSON (-o, or --format json on stdout) and an SVG chart (--svg, viz/frontier_svg.h).
#pragma once

#include <CLI/CLI.hpp>

namespace optpipe::cli {

// Registers the `frontier` subcommand on `app`. It runs from its own callback while `app`
// parses: on success it ends the parse with CLI::Success (exit 0); bad input (an unreadable
// instance, a malformed or impossible --limits) throws InputError (exit 2).
void add_frontier_command(CLI::App& app);

}  // namespace optpipe::cli
