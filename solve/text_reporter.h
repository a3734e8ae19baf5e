// The text report of a solve (solve_reporter.h), MILP-solver style: a header (the instance, the
// warm start of every heuristic, the early lower bound, each local search), the root bound, a
// progress line about every second (time, nodes, open nodes, incumbent, bound, gap, nodes/s),
// and a summary (status, makespan, bound, gap, the gain over the best heuristic, each device's
// busy and idle time and peak memory, the search's work; with `verbose` its statistics).
#pragma once

#include <ostream>

#include "solve/solve_reporter.h"

namespace optpipe {

class TextSolveReporter final : public SolveReporter {
 public:
  TextSolveReporter(std::ostream& out, ReportOptions options) : out_(out), opt_(options) {}

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
  void done_from_cache(const Instance& instance, const PipelineResult& result, const SimResult& sim,
                       const WrittenFiles& files);
  void search_statistics(const SolveStats& stats);

  std::ostream& out_;
  ReportOptions opt_;
  bool header_printed_ = false;
};

// Nodes by depth in buckets of 10 decisions, e.g. "0-9 12, 10-19 480, 20-29 9k (deepest 27)";
// "none" without nodes.
std::string depth_histogram(const std::vector<std::int64_t>& by_depth);

}  // namespace optpipe
