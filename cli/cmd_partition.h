// `optpipe partition`: choose how many layers each stage gets, jointly with the schedule
// (partition/partition_search.h), from a model preset or shape, or a measured layer profile.
#pragma once

#include <CLI/CLI.hpp>

#include "partition/partition_model.h"
#include "partition/partition_search.h"

namespace optpipe::cli {

// Registers the `partition` subcommand on `app`. It runs from its own callback while `app`
// parses: on success it ends the parse with CLI::Success (exit 0); bad input throws InputError
// (exit 2, naming the flag or field); no split that fits the memory limit throws NegativeAnswer
// (exit 1, naming the stage whose memory floor is over the limit and by how much).
void add_partition_command(CLI::App& app);

// The search with the progress on standard error (unless quiet); NoSplitFits becomes
// NegativeAnswer. Shared with `generate --partition auto`.
partition::PartitionResult run_partition_search(const partition::PartitionModel& model, double time_limit,
                                                int threads, bool quiet);

}  // namespace optpipe::cli
