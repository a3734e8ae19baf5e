#include "heuristics/periodic.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "heuristics/periodic_template.h"
#include "model/simulator.h"

namespace optpipe {

namespace {

constexpr int kCycles = 60;
constexpr double kCycleSpan = 3.0;  // the largest cycle tried, in units of the smallest

// The smallest cycle: the busiest device's work per microbatch.
double smallest_cycle(const Instance& inst) {
  double c = 0;
  for (int s = 0; s < inst.num_stages(); ++s) {
    c = std::max(c, inst.stages[s].forward + inst.duration(OpType::B, s) +
                        (inst.split_backward ? inst.stages[s].weight : 0.0));
  }
  return c;
}

}  // namespace

Built PeriodicOffload::build(const Instance& inst, const RunLimits& limits) const {
  if (inst.placement() != Placement::kOnePerDevice) {
    return Built::fail("Periodic needs one stage per device (this instance's placement: " +
                       std::string(to_string(inst.placement())) + ")");
  }
  const double c0 = smallest_cycle(inst);
  if (!(c0 > 0)) return Built::fail("Periodic: the stages have no compute time");
  Simulator sim(inst);
  const SimOptions fast = SimOptions::quiet();
  std::optional<Schedule> best;
  double best_makespan = std::numeric_limits<double>::infinity();
  std::string best_detail;
  int tried = 0;
  const double growth = std::pow(kCycleSpan, 1.0 / (kCycles - 1));
  double offload_ms = 0, reload_ms = 0;
  for (const Stage& st : inst.stages) {
    if (st.offloadable()) offload_ms = std::max(offload_ms, *st.offload), reload_ms = std::max(reload_ms, *st.reload);
  }
  for (int k = 0; k < kCycles && !limits.expired(); ++k) {
    const double c = c0 * std::pow(growth, k);
    for (int variant = 0; variant < 24; ++variant) {
      const double margin = 0.25 * (variant % 3);
      PeriodicPlanOptions po;
      po.book_channels = variant / 3 % 4 == 1;
      po.spread = variant / 3 % 4 == 2 ? 1.0 : variant / 3 % 4 == 3 ? 1.15 : 0.0;
      po.chains_only = variant >= 12;
      po.cycle = c;
      po.offload_margin = margin * offload_ms;
      po.reload_margin = margin * reload_ms;
      std::optional<Schedule> sch = periodic_schedule(inst, po);
      if (!sch) continue;
      ++tried;
      const SimResult r = sim.run(*sch, fast);
      if (!r.feasible || r.makespan >= best_makespan - kTimeEps) continue;
      best_makespan = r.makespan;
      best = std::move(sch);
      std::ostringstream d;
      d << "cycle " << c << " ms, margin " << margin << (po.book_channels ? ", channels booked" : "")
        << (po.spread > 0 ? ", offloads spread" : "") << (po.chains_only ? ", chains only" : "");
      best_detail = d.str();
    }
  }
  if (!best) {
    return Built::fail(limits.expired() ? "Periodic: stopped before a template fit"
                                        : "Periodic: no cycle up to 3x the busiest device's work gives a template that fits");
  }
  std::ostringstream d;
  d << best_detail << " (" << tried << " templates simulated)";
  return Built::ok(std::move(*best), d.str());
}

}  // namespace optpipe
