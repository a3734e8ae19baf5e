#include "heuristics/warm_starts.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <tbb/parallel_for.h>

#include "heuristics/local_search.h"

namespace optpipe {

WarmStarts build_warm_starts(const Instance& inst, const BestResult& heur, const WarmStartOptions& opt) {
  WarmStarts out;
  std::vector<const HeuristicResult*> feasible;
  for (const HeuristicResult& r : heur.results) {
    if (!r.ok()) continue;
    out.schedules.push_back(*r.schedule);
    feasible.push_back(&r);
  }
  if (opt.evaluations <= 0 || opt.improve_best <= 0) return out;
  // The best few with distinct makespans (equal makespans are often the same schedule).
  std::stable_sort(feasible.begin(), feasible.end(),
                   [](const HeuristicResult* a, const HeuristicResult* b) { return a->sim.makespan < b->sim.makespan; });
  std::vector<const HeuristicResult*> picked;
  for (const HeuristicResult* r : feasible) {
    if (static_cast<int>(picked.size()) >= opt.improve_best) break;
    if (!picked.empty() && std::fabs(picked.back()->sim.makespan - r->sim.makespan) <= 1e-9) continue;
    picked.push_back(r);
  }
  std::vector<Schedule> improved(picked.size());
  out.improved.resize(picked.size());
  tbb::parallel_for(std::size_t{0}, picked.size(), [&](std::size_t i) {
    const auto t0 = std::chrono::steady_clock::now();
    LocalSearchOptions lo;
    lo.max_evaluations = opt.evaluations;
    LocalSearchStats st;
    improved[i] = improve_schedule(inst, *picked[i]->schedule, lo, &st);
    out.improved[i] = {picked[i]->name, st.start_makespan, st.final_makespan, st.evaluations,
                       std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
  });
  for (Schedule& s : improved) out.schedules.push_back(std::move(s));
  return out;
}

}  // namespace optpipe
