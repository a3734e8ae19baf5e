// `optpipe train`: runs a schedule for real with the executor (runtime/train.h): the reference
// MLP, or synthetic sleeping ops, one thread per device or one MPI rank per device.
#pragma once

#include <CLI/CLI.hpp>

namespace optpipe::cli {

// Registers the `train` subcommand on `app`; it runs from its own callback and ends the parse
// with CLI::Success (exit 0) or CLI::RuntimeError (exit 1); bad input throws InputError (exit 2).
void add_train_command(CLI::App& app);

}  // namespace optpipe::cli
