#include "cli/report.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "model/bytes.h"
#include "viz/text_report.h"

namespace optpipe::cli {

std::string heuristic_table(const Instance& inst, const BestResult& best, bool verbose) {
  std::ostringstream out;
  char line[512];
  std::snprintf(line, sizeof line, "  %-18s %14s %8s %22s  %s\n", "heuristic", "makespan", "bubble",
                "worst peak / limit", verbose ? "time, notes" : "");
  out << line;
  for (std::size_t i = 0; i < best.results.size(); ++i) {
    const HeuristicResult& r = best.results[i];
    const char* mark = static_cast<int>(i) == best.best ? "*" : " ";
    if (!r.ok()) {
      std::snprintf(line, sizeof line, "%s %-18s %14s %8s %22s  ", mark, r.name.c_str(), "-", "-", "-");
      out << line << r.reason << "\n";
      continue;
    }
    int worst = 0;
    double worst_ratio = -1;
    for (int d = 0; d < inst.num_devices(); ++d) {
      const double ratio = r.sim.peak_memory[d] / inst.devices[d].memory_limit;
      if (ratio > worst_ratio) {
        worst_ratio = ratio;
        worst = d;
      }
    }
    const std::string peak = format_bytes(r.sim.peak_memory[worst]) + " / " +
                             format_bytes(inst.devices[worst].memory_limit);
    std::snprintf(line, sizeof line, "%s %-18s %14s %8s %22s", mark, r.name.c_str(), fmt_ms(r.sim.makespan).c_str(),
                  fmt_percent(r.sim.bubble).c_str(), peak.c_str());
    out << line;
    if (verbose) {
      std::snprintf(line, sizeof line, "  %.3f s", r.seconds);
      out << line << (r.detail.empty() ? "" : ", " + r.detail);
    }
    out << "\n";
  }
  return out.str();
}

}  // namespace optpipe::cli
