// Text reports of an instance and of a simulated schedule: the one-line description and the
// per-device summary every command prints. Pure formatting over the model's results.
#pragma once

#include <string>

#include "model/instance.h"
#include "model/simulator.h"
#include "model/time_text.h"

namespace optpipe {

// "gpt (8 devices, 8 stages, one stage per device, 24 microbatches, split backward, ...)".
std::string describe_instance(const Instance& instance);
// Makespan, bubble and one line per device: busy, idle, peak memory against its limit.
std::string summarize(const Instance& instance, const SimResult& sim);
// "28.2%"; "-" for a value that is not finite. (fmt_ms, "12.345 ms": model/time_text.h.)
std::string fmt_percent(double fraction);

}  // namespace optpipe
