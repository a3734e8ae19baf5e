#include "viz/bottleneck.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

#include "model/channel_load.h"
#include "viz/text_report.h"

namespace optpipe {

namespace {
constexpr double kSaturated = 0.8;  // a channel busy this share of the makespan is called near saturation
}  // namespace

BottleneckBound bottleneck_bound(const Instance& inst) {
  // Earliest start of F(s, 0): the chain of forwards and comm in front of stage s.
  std::vector<double> reach(static_cast<std::size_t>(inst.num_stages()), 0.0);
  for (int s = 1; s < inst.num_stages(); ++s) {
    reach[s] = reach[s - 1] + inst.stages[s - 1].forward + inst.comm_after(s - 1);
  }
  BottleneckBound best;
  const std::vector<std::vector<int>> by_device = inst.stages_by_device();
  for (int d = 0; d < inst.num_devices(); ++d) {
    BottleneckBound b;
    b.device = d;
    b.busy = inst.busy_time(d);
    b.head = std::numeric_limits<double>::infinity();
    for (int s : by_device[d]) b.head = std::min(b.head, reach[s]);
    if (by_device[d].empty()) b.head = 0;
    if (best.device < 0 || b.bound() > best.bound() + 1e-9) best = b;
  }
  return best;
}

std::string explain_bottleneck(const Instance& inst, const SimResult& sim) {
  if (!sim.feasible || inst.num_devices() == 0) return "";
  const BottleneckBound b = bottleneck_bound(inst);
  const std::vector<int> stages = inst.stages_by_device()[b.device];
  std::ostringstream out;
  out << "bottleneck: device " << b.device << " (stage" << (stages.size() == 1 ? " " : "s ");
  for (std::size_t i = 0; i < stages.size(); ++i) out << (i ? ", " : "") << stages[i];
  out << ") computes " << fmt_ms(b.busy) << " and cannot start before " << fmt_ms(b.head)
      << " (the first microbatch's way to it), so no schedule ends before " << fmt_ms(b.bound()) << ";\n";
  const double over = sim.makespan - b.bound();
  if (over <= 1e-6 * std::max(1.0, b.bound())) {
    out << "  this one ends there: its bubble is that fill and the other devices waiting for this one\n";
  } else {
    out << "  this one ends " << fmt_ms(over) << " (" << fmt_percent(over / b.bound())
        << ") later: order, memory or transfers cost that much, or no schedule reaches the bound\n";
  }
  const std::vector<ChannelLoad> loads = channel_loads(sim);
  if (const ChannelLoad* c = busiest_channel(loads)) {
    const double share = c->share(sim.makespan);
    out << "busiest PCIe channel: group " << c->group << "'s " << (c->reload ? "H2D" : "D2H") << " (devices ";
    bool first = true;
    for (int d = 0; d < static_cast<int>(sim.group_of_device.size()); ++d) {
      if (sim.group_of_device[d] != c->group) continue;  // the simulator's group index, not the file's id
      out << (first ? "" : ", ") << d;
      first = false;
    }
    out << "), " << c->transfers << (c->reload ? " reload" : " offload") << (c->transfers == 1 ? "" : "s")
        << ", busy " << fmt_ms(c->busy) << " (" << fmt_percent(share) << " of the makespan)";
    if (share >= kSaturated) out << ": near saturation, the transfers likely set this schedule's pace";
    out << "\n";
  }
  return out.str();
}

}  // namespace optpipe
