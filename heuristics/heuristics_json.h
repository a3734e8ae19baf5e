// The heuristics' results as JSON, for `optpipe schedule --format json` (docs/json.md,
// "schedule"): every heuristic's makespan, bubble and peaks or why it has no schedule, the one
// kept with its simulation, and that schedule itself. Times in ms, bytes as numbers, null for
// what does not exist. O(heuristics x devices + the kept schedule's actions).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "heuristics/registry.h"
#include "model/instance.h"

namespace optpipe {

// {"name", "title", "fits", "makespan", "bubble", "peak_memory", "reason", "detail", "seconds"}.
nlohmann::json heuristic_result_json(const HeuristicResult& result);

// {"status": "feasible" (a heuristic's schedule fits) or "unknown" (none fits; not a proof),
//  "reason", "heuristics", "best" (name, title, detail, simulation), "schedule"}.
nlohmann::json schedule_report_json(const Instance& instance, const BestResult& best);

// An instance that no schedule fits (obviously_infeasible(), model/validator.h): status
// "infeasible", `reason`, no heuristic run.
nlohmann::json infeasible_schedule_report_json(const std::string& reason);

}  // namespace optpipe
