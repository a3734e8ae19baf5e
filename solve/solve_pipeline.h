// One solve, start to end, as a library call (issue 25): what `optpipe solve`, the solver
// table (bench/solver_table), online re-scheduling (online/) and, next, the Python package all
// run. The phases, in order, each reported to a SolveObserver (solve_observer.h):
//
//   1. the schedule cache (cache/cache_lookup.h): an exact hit proven optimal is the answer (no
//      search); any other hit that fits becomes one more warm start, an exact hit's proven
//      bound a known bound;
//   2. warm starts: every heuristic, and the best few improved by local search, which stops at
//      the root's bounds -- the cheap ones first, the single-stage relaxation (and a start from
//      its order) only if a quick local search does not reach them (heuristics/warm_starts.h);
//      between the two, on small instances (up to 256 compute ops), a tree search from every
//      schedule so far (200k nodes, 1000 with offload, 20% of the time limit, at most 2 s), which
//      proves most of them in milliseconds and then is the answer (issue 21); on V and loop
//      placements without offload, where the root's device relaxation gave the bound and no
//      guided local search runs beside the tree, probing first (search/bound_probing.h: the
//      tree asked for a schedule at most a target 0.1%, 0.25%, 0.5%, 1%, 2%, ... above the bound
//      proven so far, within the same budget), whose refuted targets raise the bound for the
//      rest of the solve; with two threads, when the quick
//      phase had the device relaxation's order as a guide, one thread runs the local search from
//      that guided start beside the tree and hands it every better schedule (SolveOptions::beside),
//      then joins the tree; when the tree does not prove it but found a better schedule than
//      its warm starts, a local search from it (the full phase's budget per start) adds one more warm start;
//      that bound goes to the search as a known bound;
//   3. the branch-and-bound (search/solver.h), with the warm starts, the known bound and the
//      root relaxation computed in phase 2, for what is left of the time limit; where the tree
//      of phase 2 stopped at its limit on an instance without offload, it goes on from that
//      tree's open nodes (TreeSearch::resume) instead of starting again at the root, and where
//      probing's last target found a schedule and stopped at its limit, from probing's
//      (TreeSearch::resume_from_frontier, search/bound_probing.h's ProbingSearch); from 257 to 2047
//      compute ops under a time limit with two threads, the local search in rounds beside it
//      (improve_rounds.h, one thread), every better schedule becoming the tree's incumbent;
//   4. the cache keeps the result (better-only).
//
// The time limit covers all of it: the heuristics and the local search count against it (the
// heuristics stop looking at a quarter of it, the local search at 40%), and the stop flag
// (Ctrl-C) ends every phase with the best schedule found so far. Nothing here prints or writes files: the caller writes
// the schedule and reports (the CLI's reporters: text_reporter.h, json_reporter.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "model/instance.h"
#include "model/schedule.h"
#include "search/bound_probing.h"
#include "search/solver.h"
#include "solve/solve_observer.h"
#include "solve/solve_trace.h"

namespace optpipe {

struct PipelineOptions {
  double time_limit = 60;             // seconds, for the whole solve
  std::int64_t node_limit = -1;       // < 0: none
  double gap = 0.0;                   // stop at this relative gap
  int threads = 0;                    // for every phase (0: all hardware threads)
  std::int64_t local_search = -1;     // simulations per improved warm start (0: none; < 0: from the time limit)
  double lns = 0.0;                   // share of the time limit for large neighbourhood search
  bool transposition = true;
  bool stage_relaxation = true;
  bool device_relaxation = true;      // SolveOptions::device_relaxation
  double quantum = -1;                // SolveOptions::quantum (< 0: the instance's time quantum; 0: none)
  bool probing = true;                // small instances without offload: targets above the bound first (search/bound_probing.h)
  // Before probing's targets, the two-device relaxations within this many nodes
  // (ProbingOptions::two_device_nodes; 0: none, the default: bench/README.md, "Two devices at once").
  std::int64_t two_device_nodes = 0;
  // Memory for the open nodes (SolveOptions::pool_memory_bytes): beyond it the search goes on
  // depth-first without adding to the pool, and says so (SolveStats::pool_full).
  double pool_memory_bytes = 1024.0 * 1024.0 * 1024.0;
  BoundsMode bounds = BoundsMode::kCpu;
  int batch_size = 0;
  const std::atomic<bool>* stop = nullptr;  // set from outside (e.g. Ctrl-C) to stop early
  // The schedule cache: its file ("" : no cache) and the build that stores entries
  // (cache/cache_lookup.h).
  std::string cache_file;
  std::string build;
  // From this many compute ops on, no tree search: the local search runs in rounds on every
  // thread until the time limit instead (solve_pipeline.cc, kScaleOps: 2048 by default).
  int scale_ops = -1;  // < 0: the default
  // More warm starts from the caller (e.g. the running schedule, for online re-scheduling).
  std::vector<Schedule> warm_starts;
};

struct PipelineResult {
  SolveResult result;             // status, schedule, makespan, bound, gap, the search's statistics
  bool from_cache = false;        // an exact cache hit proven optimal answered it (no search)
  bool tree_first = false;        // the short tree search before the local search proved it
  bool tree_resumed = false;      // the search went on from the tree first's open nodes
  bool probing_resumed = false;   // ... from probing's last target's (search/bound_probing.h, ProbingSearch)
  std::string cache_key;          // that hit's entry
  std::string best_heuristic;     // the best heuristic's name ("" : none fits, or not run)
  double best_heuristic_makespan = std::numeric_limits<double>::infinity();
  double seconds = 0;             // wall time of the whole call
  double search_started = 0;      // seconds into the call when the tree search began
  // The targets tried before the tree first (search/bound_probing.h; without the found schedule,
  // which is the result's or was handed on), or none where it did not run.
  std::optional<ProbingResult> probing;

  // Every improvement of the incumbent or the bound, with when and what made it (solve_trace.h).
  std::vector<TracePoint> trace;
  // What gave the bound it returns: "tree" (the search raised it past the root), "PCIe group
  // energy", "single-stage relaxation", "node bounds" (the root's: critical path, one machine,
  // channels, memory energy), "cache" (an earlier run's), or "proof" (optimal: the bound is the
  // makespan because the search ran out of nodes).
  std::string bound_from() const;

  // Where the schedule it returns came from: the name of the warm start (heuristic, local
  // search, cache) when the search did not improve on it, "search" when it did, "cache" when an
  // exact proven cache hit answered the call.
  std::string best_from() const;
  // When that schedule was found, in seconds into the call: for a warm start, when the search
  // began (it was ready by then); for the search, when the search found it.
  double seconds_to_best() const;
};

// Solves `instance` (see above). Throws InputError for a request that cannot run (e.g. bounds
// on a GPU that is not there), before any work.
PipelineResult solve_pipeline(const Instance& instance, const PipelineOptions& options, SolveObserver& observer);
// ... with no observer.
PipelineResult solve_pipeline(const Instance& instance, const PipelineOptions& options);

}  // namespace optpipe
