// What a solve (solve_pipeline.h) tells its caller while it runs: one call per phase, in order
// -- the cache lookup, the warm starts (heuristics, the early root bound, the local searches),
// the root bound, the large neighbourhood search, progress about every second, the cache store.
// Every method does nothing by default; the CLI's text and JSON reporters (text_reporter.h,
// json_reporter.h) print them, the bench and online re-scheduling ignore them.
//
// The calls come from the solving thread, except on_progress, which comes from the search's
// monitor thread while the workers run (never two calls at once).
#pragma once

#include <string>

#include "cache/cache_lookup.h"
#include "cache/schedule_cache.h"
#include "heuristics/registry.h"
#include "heuristics/warm_starts.h"
#include "model/instance.h"
#include "search/bound_probing.h"
#include "search/solver.h"

namespace optpipe {

// The warm starts as built: every heuristic's result, and the local searches with the early
// root bound they ran against.
struct WarmStartReport {
  const Instance& instance;
  int ops = 0;  // compute ops of the instance
  const BestResult& heuristics;
  const BoundedWarmStarts& starts;
  // Small instances: the short tree search run on the heuristics' schedules before any local
  // search (solve_pipeline.h), or null when it did not run. When it proved the optimum, `starts`
  // is empty: no local search ran.
  const SolveResult* tree_first = nullptr;
  // ... and, when it did not prove it, the local search from its best schedule (null: none ran).
  const ImprovedStart* tree_polish = nullptr;
  // Small V and loop instances: the targets tried above the bound before the tree first
  // (search/bound_probing.h), or null when it did not run. When it proved the optimum,
  // tree_first is null.
  const ProbingResult* probing = nullptr;
};

class SolveObserver {
 public:
  virtual ~SolveObserver() = default;
  // A problem that does not stop the solve (e.g. an unreadable cache file).
  virtual void on_warning(const std::string& /*message*/) {}
  // The cache was asked (`file`: the cache file).
  virtual void on_cache_lookup(const cache::LookupResult& /*hit*/, const std::string& /*file*/) {}
  // A heuristic finished (`seconds` since the solve began); the heuristics run in parallel.
  virtual void on_heuristic(const HeuristicResult& /*result*/, double /*seconds*/) {}
  virtual void on_warm_starts(const WarmStartReport& /*report*/) {}
  virtual void on_root_bound(double /*bound*/) {}
  virtual void on_lns(double /*seconds*/, double /*before*/, double /*after*/, int /*improvements*/) {}
  virtual void on_progress(const SolveProgress& /*progress*/) {}
  virtual void on_cache_store(cache::StoreOutcome /*outcome*/, const std::string& /*file*/) {}
};

}  // namespace optpipe
