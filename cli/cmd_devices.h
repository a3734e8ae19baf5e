// `optpipe devices`: what this build can run on: whether it was built with CUDA, the CUDA
// devices it sees (kernels/cuda_devices.h) and the CPU threads. It has no flags.
#pragma once

#include <CLI/CLI.hpp>

namespace optpipe::cli {

// Registers the `devices` subcommand on `app`; main runs run_devices when the returned
// subcommand was given.
CLI::App* add_devices_command(CLI::App& app);

// Prints the devices; kOk (no CUDA device is an answer too, not an error).
int run_devices();

}  // namespace optpipe::cli
