// A schedule checked against its instance, as JSON, for `validate` and `simulate` with --format
// json (docs/json.md, "The check object"): whether it is valid, every violated rule (with its
// device and position), the simulation (model/simulation_json.h) and the file's claims that the
// simulation contradicts (model/schedule_claims.h). O(actions + violations).
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "model/instance.h"
#include "model/schedule.h"
#include "model/validator.h"

namespace optpipe {

// {"rule": "duplicate", "message": ..., "device": 2 or null, "position": 31 or null}.
nlohmann::json violation_json(const Violation& violation);

// {"valid", "violations", "simulation" (null when the lists are malformed and nothing ran),
// "warnings"}. `validation` is validate(instance, schedule); `timeline` as in simulation_json().
nlohmann::json validation_json(const Instance& instance, const Schedule& schedule, const Validation& validation,
                               bool timeline = false);

}  // namespace optpipe
