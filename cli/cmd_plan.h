// `optpipe plan`: the front door for a model and a cluster (issue 22, part 3). Given a model
// (preset or shape), a number of GPUs, a GPU type and memory, and a global batch, it compares
// the ways to run it (tensor x pipeline x data parallel, placement, partition, micro-batch,
// recomputation, offload) by their time per global batch (plan/plan_runner.h) and writes the
// best one's instance and schedule.
#pragma once

#include <CLI/CLI.hpp>

namespace optpipe::cli {

// Registers the `plan` subcommand on `app`. It runs from its own callback: success ends the
// parse with CLI::Success (exit 0); bad input throws InputError (exit 2, naming the flag); no
// option that fits the memory limit, or none solved in the time, throws NegativeAnswer (exit 1,
// naming the closest option and the stage whose memory floor is over the limit, by how much).
void add_plan_command(CLI::App& app);

}  // namespace optpipe::cli
