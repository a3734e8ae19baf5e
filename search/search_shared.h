// What the branch-and-bound's threads share besides the open nodes (node_pool.h): the incumbent
// and its schedule, the proven bound, the limits and the stop request. Like CP-SAT's
// SharedResponseManager, it is the one place where the workers, the monitor and the caller meet;
// everything else a worker touches is its own (search_worker.h) or read-only.
//
// Guards, member by member:
//   incumbent_        atomic; lowered only under best_mu_ (with best_), read anywhere
//   best_, best_origin_, seconds_to_best_   best_mu_
//   proven_bound_     atomic, only raised (raise_proven)
//   gap_cut_bound_    atomic, only lowered (note_cut)
//   stop_, stop_code_ atomics; the first reason to stop wins (request_stop)
//   nodes_            atomic count of expanded nodes, for the node limit
//   start_, gap_, node_limit_   set at construction and by begin_resume, read-only while the
//                     workers run (begin_resume is called between searches, never during one)
//   target_           set before the workers start (set_target), read-only after
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <mutex>
#include <string>

#include "model/schedule.h"

namespace optpipe {

// How far below a schedule's makespan a proven bound may lie and still prove it optimal: the
// relaxations return their value less a hair (1e-7 ms), so that a bound they prove never exceeds
// a schedule's makespan by rounding.
inline constexpr double kRelaxationTolerance = 1e-6;

enum StopCode { kNotStopped = 0, kTimeLimit, kInterrupted, kNodeLimit, kGapReached, kProven, kNoTree };
const char* stop_text(int code);

class SharedSearchState {
 public:
  SharedSearchState(double gap, std::int64_t node_limit);

  // ---- the incumbent ----
  double incumbent() const { return incumbent_.load(); }
  // Takes `schedule` as the incumbent if `makespan` is better by more than kTimeEps; `origin`
  // says what found it. Returns whether it was taken.
  bool offer(const Schedule& schedule, double makespan, const std::string& origin);
  // ... as offer, for a schedule the tree found: also records when.
  bool offer_from_tree(Schedule&& schedule, double makespan);
  Schedule best() const;
  std::string best_origin() const;
  double seconds_to_best() const;
  void set_seconds_to_best(double s);

  // A node can only improve the incumbent by more than the gap tolerance if its bound is below
  // this (infinity without an incumbent); with a target (set_target), nor if its bound passes
  // the target. With a time quantum q (set_time_quantum), a better schedule is at least q
  // better: the cutoff is then half a quantum below the incumbent (below the target's largest
  // multiple of q plus half a quantum).
  double cutoff() const;
  // Every makespan is a whole multiple of `q` (model/time_quantum.h; 0: nothing is known). Before
  // the workers start.
  void set_time_quantum(double q) { quantum_ = q; }
  // Only schedules of makespan at most `target` are wanted (SolveOptions::target): nodes whose
  // bound passes it are cut as if an incumbent had that makespan. Before the workers start.
  void set_target(double target) { target_ = target; }
  double target() const { return target_; }

  // ---- the proven bound ----
  double proven_bound() const { return proven_bound_.load(); }
  const std::atomic<double>& proven_bound_atomic() const { return proven_bound_; }
  // b rounded up to the time quantum, less kTimeEps (so that it never exceeds a makespan by the
  // makespan's own rounding), where that is more than b; b without a quantum.
  double rounded_bound(double b) const;
  // Raises the proven bound to rounded_bound(b).
  void raise_proven(double b);
  // A node cut with bound b: if it was cut only thanks to the gap tolerance, the proven bound
  // must not exceed b.
  void note_cut(double b);
  double gap_cut_bound() const { return gap_cut_bound_.load(); }

  // ---- limits and stopping ----
  bool stopping() const { return stop_.load(std::memory_order_relaxed); }
  void request_stop(int code);
  int stop_code() const { return stop_code_.load(); }
  // Counts one expanded node against the node limit.
  void count_node();
  std::int64_t nodes() const { return nodes_.load(); }
  double seconds() const;
  double gap() const { return gap_; }

  // Between two parts of one search (TreeSearch::resume in solver.h), with no worker running:
  // clears the stop request, counts time from now and `node_limit` nodes (< 0: none) from the
  // nodes expanded so far, and takes `gap`. The incumbent and the proven bound stay.
  void begin_resume(double gap, std::int64_t node_limit);

 private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point start_;
  double gap_;
  std::int64_t node_limit_;

  // A new incumbent that meets the proven bound (within kRelaxationTolerance, and then the bound
  // is lifted to it) ends the search at once; the monitor would see it within 100 ms, and small
  // instances are solved in less.
  void stop_if_proven(double makespan);

  std::atomic<double> incumbent_{std::numeric_limits<double>::infinity()};
  double target_ = std::numeric_limits<double>::infinity();
  double quantum_ = 0;
  mutable std::mutex best_mu_;
  Schedule best_;
  std::string best_origin_;
  double seconds_to_best_ = 0;

  std::atomic<double> proven_bound_{0};
  std::atomic<double> gap_cut_bound_{std::numeric_limits<double>::infinity()};
  std::atomic<bool> stop_{false};
  std::atomic<int> stop_code_{kNotStopped};
  std::atomic<std::int64_t> nodes_{0};
};

void atomic_min(std::atomic<double>& x, double v);
void atomic_max(std::atomic<double>& x, double v);

}  // namespace optpipe
