#include "heuristics/base_schedules.h"

#include <algorithm>
#include <optional>

#include "model/simulator.h"
#include "model/validator.h"
#include "heuristics/registry.h"
#include "heuristics/zb_greedy.h"

namespace optpipe {

std::vector<BaseSchedule> memory_oblivious_bases(const Instance& inst, std::size_t limit) {
  std::vector<BaseSchedule> all;
  const SimOptions free_run = SimOptions::quiet(false);
  Simulator sim(inst);
  auto consider = [&](std::string origin, Schedule sch) {
    if (!check_structure(inst, sch).empty()) return;
    const SimResult r = sim.run(sch, free_run);
    if (!r.feasible) return;
    all.push_back({std::move(origin), std::move(sch), r.makespan});
  };
  for (const auto& h : all_heuristics()) {
    if (h->memory_aware()) continue;
    Built b = h->build(inst);
    if (b.schedule) consider(h->title(), std::move(*b.schedule));
  }
  // The greedy scheduler with activation budgets between 1F1B's and none: bases that need less
  // memory than the fastest ones, so fewer offloads make them fit.
  const int p = inst.num_devices();
  std::vector<std::optional<double>> caps{std::nullopt};
  for (int k : {p, (3 * p + 1) / 2, 2 * p}) caps.push_back(static_cast<double>(k));
  for (const auto& cap : caps) {
    for (bool prioritize_b : {true, false}) {
      ZbGreedyOptions o;
      o.ignore_memory = true;
      o.cap_activations = cap;
      o.prioritize_b = prioritize_b;
      std::string why;
      if (auto s = zb_greedy_schedule(inst, o, &why)) {
        const std::string order = prioritize_b ? "B first" : "F first";
        consider(cap ? "ZB greedy (" + std::to_string(static_cast<int>(*cap)) + " activations, " + order + ")"
                     : "ZB greedy (no memory limit, " + order + ")",
                 std::move(*s));
      }
    }
  }
  std::stable_sort(all.begin(), all.end(),
                   [](const BaseSchedule& a, const BaseSchedule& b) { return a.free_makespan < b.free_makespan; });
  std::vector<BaseSchedule> out;
  for (auto& b : all) {
    if (out.size() >= limit) break;
    const bool duplicate = std::any_of(out.begin(), out.end(),
                                       [&](const BaseSchedule& o) { return o.schedule.devices == b.schedule.devices; });
    if (!duplicate) out.push_back(std::move(b));
  }
  return out;
}

}  // namespace optpipe
