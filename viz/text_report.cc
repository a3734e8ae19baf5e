#include "viz/text_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "model/bytes.h"

namespace optpipe {

// Non-finite values print as "-": never "-nan%" (issue 23).
std::string fmt_percent(double fraction) {
  if (!std::isfinite(fraction)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * fraction);
  return buf;
}

std::string describe_instance(const Instance& inst) {
  std::ostringstream out;
  out << (inst.name.empty() ? "(unnamed)" : inst.name) << ": " << inst.num_devices() << " device"
      << (inst.num_devices() == 1 ? "" : "s") << ", " << inst.num_stages() << " stage" << (inst.num_stages() == 1 ? "" : "s")
      << " (" << to_string(inst.placement()) << "), " << inst.microbatches << " microbatch"
      << (inst.microbatches == 1 ? "" : "es") << ", " << (inst.split_backward ? "split" : "fused") << " backward";
  int offloadable = 0;
  for (const Stage& st : inst.stages) offloadable += st.offloadable() ? 1 : 0;
  if (offloadable > 0) out << ", " << offloadable << " offloadable stage" << (offloadable == 1 ? "" : "s");
  return out.str();
}

std::string summarize(const Instance& inst, const SimResult& sim) {
  std::ostringstream out;
  if (!sim.feasible) {
    out << "infeasible: " << sim.reason << "\n";
    return out.str();
  }
  out << "makespan " << fmt_ms(sim.makespan) << ", bubble " << fmt_percent(sim.bubble) << "\n";
  char line[256];
  std::snprintf(line, sizeof line, "  %-6s %12s %12s %12s %12s %10s\n", "device", "busy", "idle", "peak memory",
                "limit", "transfers");
  out << line;
  for (int d = 0; d < inst.num_devices(); ++d) {
    int transfers = 0;
    for (const Transfer& t : sim.transfers) transfers += t.device == d ? 1 : 0;
    std::snprintf(line, sizeof line, "  %-6d %12s %12s %12s %12s %10d\n", d, fmt_ms(sim.busy[d]).c_str(),
                  fmt_ms(sim.makespan - sim.busy[d]).c_str(), format_bytes(sim.peak_memory[d]).c_str(),
                  format_bytes(inst.devices[d].memory_limit).c_str(), transfers);
    out << line;
  }
  return out.str();
}

}  // namespace optpipe
