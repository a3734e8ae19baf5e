#include "heuristics/heuristics_json.h"

#include "model/json_number.h"
#include "model/schedule_io.h"
#include "model/simulation_json.h"

namespace optpipe {

using nlohmann::json;

json heuristic_result_json(const HeuristicResult& r) {
  return {{"name", r.name},
          {"title", r.title},
          {"fits", r.ok()},
          {"makespan", r.ok() ? finite_or_null(r.sim.makespan) : json(nullptr)},
          {"bubble", r.ok() ? finite_or_null(r.sim.bubble) : json(nullptr)},
          {"peak_memory", r.ok() ? json(r.sim.peak_memory) : json(nullptr)},
          {"reason", r.ok() ? json(nullptr) : json(r.reason)},
          {"detail", r.detail.empty() ? json(nullptr) : json(r.detail)},
          {"seconds", r.seconds}};
}

json schedule_report_json(const Instance& inst, const BestResult& best) {
  json heuristics = json::array();
  for (const HeuristicResult& r : best.results) heuristics.push_back(heuristic_result_json(r));
  const HeuristicResult* chosen = best.best_result();
  if (!chosen) {
    return {{"status", "unknown"},
            {"reason", "no heuristic found a schedule that fits in memory"},
            {"heuristics", heuristics},
            {"best", nullptr},
            {"schedule", nullptr}};
  }
  return {{"status", "feasible"},
          {"reason", nullptr},
          {"heuristics", heuristics},
          {"best",
           {{"name", chosen->name},
            {"title", chosen->title},
            {"detail", chosen->detail.empty() ? json(nullptr) : json(chosen->detail)},
            {"simulation", simulation_json(inst, *chosen->schedule, chosen->sim)}}},
          {"schedule", schedule_to_json(*chosen->schedule)}};
}

json infeasible_schedule_report_json(const std::string& reason) {
  return {{"status", "infeasible"},
          {"reason", reason},
          {"heuristics", json::array()},
          {"best", nullptr},
          {"schedule", nullptr}};
}

}  // namespace optpipe
