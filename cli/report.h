// Text reports the CLI prints: per-device summaries of a simulated schedule and the table of
// heuristic results. Pure formatting over the libraries' results.
#pragma once

#include <string>

#include "model/instance.h"
#include "model/schedule.h"
#include "model/simulator.h"
#include "heuristics/registry.h"

namespace optpipe::cli {

// "gpt (8 devices, 8 stages, one stage per device, 24 microbatches, split backward, ...)".
std::string describe_instance(const Instance& instance);
// Makespan, bubble and one line per device: busy, idle, peak memory against its limit.
std::string summarize(const Instance& instance, const SimResult& sim);
// One line per heuristic: makespan, bubble, worst peak or the reason it has no schedule.
std::string heuristic_table(const Instance& instance, const BestResult& best, bool verbose);
std::string fmt_ms(double ms);
std::string fmt_percent(double fraction);

}  // namespace optpipe::cli
