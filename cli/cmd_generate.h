// `optpipe generate`: a spec instance from a model and a cluster (instances/generator/).
#pragma once

#include <CLI/CLI.hpp>

namespace optpipe::cli {

// Registers the `generate` subcommand on `app`. It runs from its own callback while `app`
// parses: on success it ends the parse with CLI::Success (exit 0); bad input throws InputError
// (exit 2, the message names the field).
void add_generate_command(CLI::App& app);

}  // namespace optpipe::cli
