#include "heuristics/heuristic.h"

#include <chrono>
#include <cmath>
#include <sstream>

#include "engine/bytes.h"
#include "engine/validator.h"

namespace optpipe {

std::string memory_shortfall(const std::string& title, const Instance& inst, const Schedule& schedule) {
  SimOptions opt;
  opt.enforce_memory_limit = false;
  opt.record_timeline = false;
  opt.record_memory = false;
  const SimResult free_run = simulate(inst, schedule, opt);
  if (!free_run.feasible) return title + "'s order deadlocks on this instance: " + free_run.reason;
  const auto by_device = inst.stages_by_device();
  std::ostringstream out;
  bool first = true;
  for (int d = 0; d < inst.num_devices(); ++d) {
    const Device& dev = inst.devices[d];
    if (free_run.peak_memory[d] <= dev.memory_limit + kMemoryTolerance) continue;
    double act = 0;
    for (int s : by_device[d]) act = std::max(act, inst.stages[s].activation);
    out << (first ? "" : "; ") << title << " needs " << format_bytes(free_run.peak_memory[d]) << " on device " << d
        << " (static " << format_bytes(dev.static_memory);
    if (act > 0) {
      char count[32];
      std::snprintf(count, sizeof count, "%.1f", (free_run.peak_memory[d] - dev.static_memory) / act);
      out << " + " << count << " activations of " << format_bytes(act);
    }
    out << ") > limit " << format_bytes(dev.memory_limit);
    first = false;
  }
  if (first) {
    // Every device fits when nothing waits; the deadlock comes from the waits themselves.
    out << title << " deadlocks under the memory limits although its peaks fit without waiting";
  }
  return out.str();
}

HeuristicResult run_heuristic(const Heuristic& h, const Instance& inst) {
  const auto t0 = std::chrono::steady_clock::now();
  HeuristicResult res;
  res.name = h.name();
  res.title = h.title();
  Built built = h.build(inst);
  res.detail = built.detail;
  auto finish = [&]() {
    res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return res;
  };
  if (!built.schedule) {
    res.reason = built.reason.empty() ? h.title() + " produced no schedule" : built.reason;
    return finish();
  }
  Schedule& sch = *built.schedule;
  sch.instance = inst.name;
  const Validation v = validate(inst, sch);
  if (!v.sim) {
    // A structural error is a bug in the heuristic, not in the instance: say so plainly.
    res.reason = "internal error: " + h.title() + " built an invalid schedule: " + v.violations.front().message;
    return finish();
  }
  res.sim = *v.sim;
  if (!res.sim.feasible) {
    res.reason = memory_shortfall(h.title(), inst, sch);
    return finish();
  }
  sch.makespan = res.sim.makespan;
  sch.bubble = res.sim.bubble;
  sch.peak_memory = res.sim.peak_memory;
  sch.status = "feasible";
  sch.solver = "optpipe heuristic " + h.title();
  res.schedule = std::move(sch);
  return finish();
}

}  // namespace optpipe
