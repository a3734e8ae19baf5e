#include "cache/repair.h"

#include <cmath>
#include <limits>

#include "model/simulator.h"
#include "model/validator.h"
#include "heuristics/ada_offload.h"
#include "heuristics/offload_edit.h"

namespace optpipe::cache {
namespace {

// Removes every offload (with its R) that the instance does not allow; returns how many.
int strip_disallowed_offloads(const Instance& inst, Schedule& sch, bool all) {
  int removed = 0;
  for (int d = 0; d < sch.num_devices(); ++d) {
    // Collect first: set_offload edits the list.
    std::vector<std::pair<int, int>> drop;
    for (const Action& a : sch.devices[d]) {
      if (a.type != OpType::F || a.r <= 0) continue;
      const bool stage_ok = a.stage >= 0 && a.stage < inst.num_stages() && inst.stages[a.stage].offloadable();
      if (all || !stage_ok || !inst.is_offload_level(a.r)) drop.emplace_back(a.stage, a.mb);
    }
    for (const auto& [s, j] : drop) {
      set_offload(sch, d, s, j, 0.0, 0);
      ++removed;
    }
  }
  return removed;
}

// The schedule with its measured fields set, when validate() accepts it.
std::optional<Schedule> checked(const Instance& inst, Schedule sch, std::string* why) {
  const Validation v = validate(inst, sch, SimOptions::quiet());
  if (!v.valid()) {
    if (why) *why = v.violations.front().message;
    return std::nullopt;
  }
  if (!v.sim || !v.sim->feasible) {
    if (why) *why = v.sim ? v.sim->reason : "not simulated";
    return std::nullopt;
  }
  sch.makespan = v.sim->makespan;
  sch.bubble = v.sim->bubble;
  sch.peak_memory = v.sim->peak_memory;
  return sch;
}

}  // namespace

Fitted fit_schedule(const Instance& inst, Schedule sch) {
  Fitted out;
  sch.instance = inst.name;
  sch.makespan.reset();
  sch.bubble.reset();
  sch.bound.reset();
  sch.gap.reset();
  sch.peak_memory.clear();
  sch.status = "feasible";
  if (sch.num_devices() != inst.num_devices()) {
    out.note = "the cached schedule has " + std::to_string(sch.num_devices()) + " device lists, the instance " +
               std::to_string(inst.num_devices()) + " devices";
    return out;
  }
  int stripped = 0;
  if (!check_structure(inst, sch, 1).empty()) stripped = strip_disallowed_offloads(inst, sch, false);
  if (const auto problems = check_structure(inst, sch, 1); !problems.empty()) {
    out.note = "the cached schedule does not fit this instance's structure: " + problems.front().message;
    return out;
  }
  const SimResult sim = simulate(inst, sch, SimOptions::quiet());
  if (sim.feasible) {
    out.makespan = sim.makespan;
    sch.makespan = sim.makespan;
    sch.bubble = sim.bubble;
    sch.peak_memory = sim.peak_memory;
    out.schedule = std::move(sch);
    out.note = stripped ? "fits after removing " + std::to_string(stripped) + " offloads the instance does not allow"
                        : "fits as is";
    return out;
  }
  // Repair: AdaOffload's offload insertion from the lists as they are, and without offloads.
  std::string why = sim.reason;
  Schedule bare = sch;
  const int had = strip_disallowed_offloads(inst, bare, true);
  std::vector<Schedule> bases{sch};
  if (had > 0) bases.push_back(bare);
  for (const Schedule& base : bases) {
    const Built b = ada_offload_from(inst, base, "the cached schedule");
    if (!b.schedule) {
      why = b.reason;
      continue;
    }
    std::string reason;
    std::optional<Schedule> ok = checked(inst, *b.schedule, &reason);
    if (!ok) {
      why = reason;
      continue;
    }
    if (!out.schedule || *ok->makespan < out.makespan - kTimeEps) {
      out.makespan = *ok->makespan;
      ok->solver = sch.solver;
      ok->status = "feasible";
      out.schedule = std::move(ok);
      out.repaired = true;
      out.note = "repaired to fit memory (" + b.detail + ")";
    }
  }
  if (!out.schedule) out.note = "does not fit and could not be repaired: " + why;
  return out;
}

}  // namespace optpipe::cache
