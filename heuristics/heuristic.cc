#include "heuristics/heuristic.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>

#include "model/bytes.h"
#include "model/validator.h"

namespace optpipe {

std::string memory_shortfall(const std::string& title, const Instance& inst, const Schedule& schedule) {
  const SimResult free_run = simulate(inst, schedule, SimOptions::quiet(false));
  if (!free_run.feasible) return title + "'s order deadlocks on this instance: " + free_run.reason;
  const auto by_device = inst.stages_by_device();
  // Report the device that is furthest over its limit, and how many others are over too.
  int worst = -1, over = 0;
  double worst_excess = 0;
  for (int d = 0; d < inst.num_devices(); ++d) {
    const double excess = free_run.peak_memory[d] - inst.devices[d].memory_limit;
    if (excess <= kMemoryTolerance) continue;
    ++over;
    if (worst < 0 || excess > worst_excess) {
      worst = d;
      worst_excess = excess;
    }
  }
  if (worst < 0) {
    // Every device fits when nothing waits; the deadlock comes from the waits themselves.
    return title + " deadlocks under the memory limits although its peaks fit without waiting";
  }
  const Device& dev = inst.devices[worst];
  double act = 0;
  for (int s : by_device[worst]) act = std::max(act, inst.stages[s].activation);
  std::ostringstream out;
  out << title << " needs ";
  if (act > 0) {
    char count[32];
    std::snprintf(count, sizeof count, "%.1f", (free_run.peak_memory[worst] - dev.static_memory) / act);
    out << count << " activations on device " << worst << ": " << format_bytes(free_run.peak_memory[worst])
        << " (static " << format_bytes(dev.static_memory) << " + " << count << " x " << format_bytes(act) << ")";
  } else {
    out << format_bytes(free_run.peak_memory[worst]) << " on device " << worst;
  }
  out << " > limit " << format_bytes(dev.memory_limit);
  if (over > 1) out << "; " << over - 1 << " more device" << (over > 2 ? "s" : "") << " over the limit";
  return out.str();
}

RunLimits RunLimits::within(double seconds, const std::atomic<bool>* stop) {
  RunLimits l;
  l.stop = stop;
  if (seconds < 365.0 * 24 * 3600) {
    l.deadline = std::chrono::steady_clock::now() +
                 std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                     std::chrono::duration<double>(std::max(0.0, seconds)));
  }
  return l;
}

HeuristicResult run_heuristic(const Heuristic& h, const Instance& inst, const RunLimits& limits) {
  const auto t0 = std::chrono::steady_clock::now();
  HeuristicResult res;
  res.name = h.name();
  res.title = h.title();
  Built built = h.build(inst, limits);
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
