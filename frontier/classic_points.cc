#include "frontier/classic_points.h"

#include <algorithm>

#include "frontier/memory_limits.h"
#include "heuristics/registry.h"
#include "model/simulator.h"

namespace optpipe::frontier {
namespace {

// Built for `instance`; a memory-aware heuristic that finds nothing there is built again with
// no memory limit.
Built build_classic(const Heuristic& h, const Instance& instance) {
  Built built = h.build(instance);
  if (built.schedule || !h.memory_aware()) return built;
  Built free = h.build(with_memory_limit(instance, unconstrained_limit(instance)));
  if (!free.schedule) return built;
  free.detail = "built with no memory limit (for the instance's own: " + built.reason + "): " + free.detail;
  return free;
}

ClassicPoint classic_point(const Heuristic& h, const Instance& instance) {
  ClassicPoint p;
  p.name = h.name();
  p.title = h.title();
  Built built = build_classic(h, instance);
  p.detail = built.detail;
  if (!built.schedule) {
    p.reason = built.reason;
    return p;
  }
  const SimResult sim = simulate(instance, *built.schedule, SimOptions::quiet(false));  // no memory waits
  if (!sim.feasible) {
    p.reason = p.title + " does not complete: " + sim.reason;
    return p;
  }
  const auto peak = std::max_element(sim.peak_memory.begin(), sim.peak_memory.end());
  p.peak = *peak;
  p.peak_device = static_cast<int>(peak - sim.peak_memory.begin());
  p.makespan = sim.makespan;
  Schedule& sch = *built.schedule;
  sch.instance = instance.name;
  sch.makespan = sim.makespan;
  sch.bubble = sim.bubble;
  sch.peak_memory = sim.peak_memory;
  sch.status = "feasible";
  sch.solver = "heuristic " + p.title + " (at its peak memory)";
  p.schedule = std::move(sch);
  return p;
}

}  // namespace

std::vector<ClassicPoint> classic_points(const Instance& instance) {
  std::vector<ClassicPoint> out;
  for (const std::string& name : kClassicSchedules) {
    if (const Heuristic* h = find_heuristic(name)) {
      out.push_back(classic_point(*h, instance));
    } else {
      ClassicPoint p;
      p.name = p.title = name;
      p.reason = "no heuristic named " + name;
      out.push_back(std::move(p));
    }
  }
  return out;
}

}  // namespace optpipe::frontier
