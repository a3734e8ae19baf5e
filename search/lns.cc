#include "search/lns.h"

#include <algorithm>
#include <chrono>

#include "search/solver.h"
#include "model/simulator.h"
#include "model/validator.h"

namespace optpipe {

Schedule improve_by_lns(const Instance& inst, const Schedule& start, const LnsOptions& opt, LnsStats* stats) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  LnsStats local;
  LnsStats& st = stats ? *stats : local;
  st = LnsStats{};
  const SimOptions quiet = SimOptions::quiet();
  Schedule best = start;
  if (!check_structure(inst, start).empty()) return best;
  const SimResult first = simulate(inst, start, quiet);
  if (!first.feasible) return best;
  double best_makespan = first.makespan;
  st.start_makespan = st.final_makespan = best_makespan;
  const int m = inst.microbatches;
  const int w = std::clamp(opt.window, 1, m);
  auto out_of_time = [&] { return elapsed() >= opt.time_limit || (opt.stop && opt.stop->load()); };

  for (int pass = 0; pass < opt.max_passes && !out_of_time(); ++pass) {
    ++st.passes;
    bool improved = false;
    for (int j0 = 0; j0 + w <= m && !out_of_time(); ++j0) {
      Neighbourhood nb;
      nb.guide = best;
      nb.free_microbatch.assign(static_cast<std::size_t>(m), 0);
      for (int j = j0; j < j0 + w; ++j) nb.free_microbatch[j] = 1;
      SolveOptions so;
      so.threads = 1;
      so.node_limit = opt.nodes_per_window;
      so.neighbourhood = &nb;
      so.stop = opt.stop;
      so.transposition_memory_bytes = 16.0 * 1024 * 1024;
      so.time_limit = std::max(0.0, opt.time_limit - elapsed());
      const SolveResult r = solve(inst, {best}, so);
      ++st.repairs;
      st.nodes += r.stats.nodes;
      if (r.schedule && r.makespan < best_makespan - kTimeEps) {
        best_makespan = r.makespan;
        best = *r.schedule;
        ++st.improvements;
        improved = true;
      }
    }
    if (!improved) break;
  }
  st.final_makespan = best_makespan;
  st.seconds = elapsed();
  return best;
}

}  // namespace optpipe
