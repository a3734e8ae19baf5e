// Text reports the CLI prints: the table of heuristic results (and, from viz/text_report.h, the
// instance line and the per-device summary of a simulated schedule). Pure formatting.
#pragma once

#include <string>

#include "model/instance.h"
#include "model/schedule.h"
#include "model/simulator.h"
#include "heuristics/registry.h"
#include "viz/text_report.h"

namespace optpipe::cli {

using ::optpipe::describe_instance;  // viz/text_report.h
using ::optpipe::fmt_ms;
using ::optpipe::fmt_percent;
using ::optpipe::summarize;
// One line per heuristic: makespan, bubble, worst peak or the reason it has no schedule.
std::string heuristic_table(const Instance& instance, const BestResult& best, bool verbose);

}  // namespace optpipe::cli
