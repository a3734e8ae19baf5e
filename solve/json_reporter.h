// The JSON-lines report of a solve (solve_reporter.h), for scripts: one object per line, each
// with an "event": "cache" (the lookup), "start" (the instance, every heuristic's makespan, the
// local searches, the early lower bound), "root", "lns", "progress" (about every second),
// "cache_store", and "done" (status, makespan, bound, gap, root bound, the best heuristic, the
// search's work; "best_from": the warm start that gave the schedule, or "search";
// "search_started", "seconds_to_best_total" and "total_seconds" on the call's clock, where
// "seconds" and "seconds_to_best" are the search's own; every summed search counter under "stats"; with `verbose` the nodes by depth).
// Infinite values are null. With `quiet` only "done" is printed.
#pragma once

#include <ostream>

#include <nlohmann/json.hpp>

#include "search/bound_probing.h"
#include "solve/solve_reporter.h"

namespace optpipe {

// Probing's targets (search/bound_probing.h) as the "start" event's `probing` object: start,
// targets (target, found, refuted, nodes, seconds), nodes, seconds, bound, proven, makespan
// (null: none found). The Python package's SolveResult.probing is the same object.
nlohmann::json probing_to_json(const ProbingResult& probing);

class JsonSolveReporter final : public SolveReporter {
 public:
  JsonSolveReporter(std::ostream& out, ReportOptions options) : out_(out), opt_(options) {}

  void on_cache_lookup(const cache::LookupResult& hit, const std::string& file) override;
  void on_heuristic(const HeuristicResult& result, double seconds) override;
  void on_warm_starts(const WarmStartReport& report) override;
  void on_root_bound(double bound) override;
  void on_lns(double seconds, double before, double after, int improvements) override;
  void on_progress(const SolveProgress& progress) override;
  void on_cache_store(cache::StoreOutcome outcome, const std::string& file) override;
  void done(const Instance& instance, const PipelineResult& result, const SimResult& sim,
            const WrittenFiles& files) override;

 private:
  std::ostream& out_;
  ReportOptions opt_;
};

}  // namespace optpipe
