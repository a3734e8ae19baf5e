#include "model/validation_json.h"

#include "model/schedule_claims.h"
#include "model/simulation_json.h"

namespace optpipe {

nlohmann::json violation_json(const Violation& v) {
  return {{"rule", to_string(v.rule)},
          {"message", v.message},
          {"device", v.device >= 0 ? nlohmann::json(v.device) : nlohmann::json(nullptr)},
          {"position", v.position >= 0 ? nlohmann::json(v.position) : nlohmann::json(nullptr)}};
}

nlohmann::json validation_json(const Instance& inst, const Schedule& sch, const Validation& v, bool timeline) {
  nlohmann::json violations = nlohmann::json::array();
  for (const Violation& x : v.violations) violations.push_back(violation_json(x));
  nlohmann::json warnings = nlohmann::json::array();
  if (v.sim) {
    for (const std::string& w : claim_warnings(sch, *v.sim)) warnings.push_back(w);
  }
  return {{"valid", v.valid()},
          {"violations", violations},
          {"simulation", v.sim ? simulation_json(inst, sch, *v.sim, timeline) : nlohmann::json(nullptr)},
          {"warnings", warnings}};
}

}  // namespace optpipe
