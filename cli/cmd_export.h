// `optpipe export`: a schedule in another runtime's format (issue 9): PyTorch's pipelining CSV
// (model/torch_csv.h) or the schedule JSON again.
#pragma once

#include <CLI/CLI.hpp>

namespace optpipe::cli {

// Registers the `export` subcommand on `app`. It runs from its own callback while `app` parses:
// on success it ends the parse with CLI::Success (exit 0); bad input (an unreadable file, a
// schedule that does not fit the instance, offloads without --drop-offload) throws InputError
// (exit 2).
void add_export_command(CLI::App& app);

}  // namespace optpipe::cli
