// The branch-and-bound's monitor thread (solver.h): every 10 ms it enforces the time limit and
// the stop flag; every 100 ms (and at each progress report) it checks whether the open nodes can
// still beat the incumbent (then the search is proven) or the gap is reached, and drops the open
// nodes an improved incumbent made useless (node_pool.h); every progress_interval it reports
// progress to SolveOptions::on_progress.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "search/node_pool.h"
#include "search/search_shared.h"
#include "search/solver.h"

namespace optpipe {

// The proven lower bound on the optimum: the smallest bound of the open nodes, of the subtrees
// being explored, and of nodes cut only because of the gap tolerance; capped by the incumbent
// (and by the target, SolveOptions::target: an exhausted search proves every schedule above it).
// A bound once proven stays proven: the result is the largest seen (children's raw bounds can be
// below their parent's, so the current minimum can dip; see dive_worker.h).
double global_bound(SharedSearchState& shared, const NodePool& pool);

SolveProgress search_progress(SharedSearchState& shared, const NodePool& pool);

class SearchMonitor {
 public:
  SearchMonitor(SharedSearchState& shared, NodePool& pool, const SolveOptions& options);
  ~SearchMonitor();  // stops it if still running
  SearchMonitor(const SearchMonitor&) = delete;
  SearchMonitor& operator=(const SearchMonitor&) = delete;

  void start();
  // The workers are done: stop the monitor and wait for it.
  void finish();
  // Open nodes dropped from the pool because an incumbent made them useless.
  std::int64_t dropped() const { return dropped_; }

 private:
  void loop();
  void drop_useless_nodes();

  SharedSearchState& shared_;
  NodePool& pool_;
  const SolveOptions& opt_;
  std::thread thread_;
  std::mutex mu_;                 // guards done_
  std::condition_variable cv_;
  bool done_ = false;
  double pruned_at_ = 0;          // the incumbent the pool was last pruned for (monitor thread only)
  std::int64_t dropped_ = 0;      // written by the monitor thread, read after finish()
};

}  // namespace optpipe
