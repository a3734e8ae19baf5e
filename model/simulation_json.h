// A simulation as JSON, for the commands' --format json (docs/json.md, "The simulation object"):
// whether it completes, makespan and bubble, per device its busy and idle time, peak memory,
// limit and transfers; when it deadlocks, the reason, the time it stopped and what waits; on
// request the timeline (every action's start and end, every transfer's request, start and end).
// Times in ms and bytes as plain numbers; null for what does not exist (the makespan of a
// deadlock, the end of an action that never ran). O(actions + transfers).
#pragma once

#include <nlohmann/json.hpp>

#include "model/instance.h"
#include "model/schedule.h"
#include "model/simulator.h"

namespace optpipe {

// "input", "forward_memory", "reload_memory", "reload_offload".
const char* to_string(Stall::Kind kind);

// `sim` is simulate(instance, schedule); `timeline` adds the "timeline" object (it needs a
// simulation that recorded one).
nlohmann::json simulation_json(const Instance& instance, const Schedule& schedule, const SimResult& sim,
                               bool timeline = false);

}  // namespace optpipe
