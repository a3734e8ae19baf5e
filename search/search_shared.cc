#include "search/search_shared.h"

#include <algorithm>
#include <cassert>

#include "model/simulator.h"
#include "model/time_quantum.h"

namespace optpipe {

const char* stop_text(int code) {
  switch (code) {
    case kTimeLimit: return "time limit";
    case kInterrupted: return "interrupted";
    case kNodeLimit: return "node limit";
    case kGapReached: return "gap reached";
    case kProven: return "proven optimal";
    case kNoTree: return "no tree search at this size";
    default: return "";
  }
}

void atomic_min(std::atomic<double>& x, double v) {
  double cur = x.load();
  while (v < cur && !x.compare_exchange_weak(cur, v)) {
  }
}

void atomic_max(std::atomic<double>& x, double v) {
  double cur = x.load();
  while (v > cur && !x.compare_exchange_weak(cur, v)) {
  }
}

SharedSearchState::SharedSearchState(double gap, std::int64_t node_limit)
    : start_(Clock::now()), gap_(gap), node_limit_(node_limit) {}

bool SharedSearchState::offer(const Schedule& schedule, double makespan, const std::string& origin) {
  std::lock_guard<std::mutex> lock(best_mu_);
  if (!(makespan < incumbent_.load() - kTimeEps)) return false;
  best_ = schedule;
  best_origin_ = origin;
  incumbent_.store(makespan);
  stop_if_proven(makespan);
  return true;
}

bool SharedSearchState::offer_from_tree(Schedule&& schedule, double makespan) {
  std::lock_guard<std::mutex> lock(best_mu_);
  if (!(makespan < incumbent_.load() - kTimeEps)) return false;
  best_ = std::move(schedule);
  best_origin_ = "branch-and-bound";
  incumbent_.store(makespan);
  seconds_to_best_ = seconds();
  stop_if_proven(makespan);
  return true;
}

void SharedSearchState::stop_if_proven(double makespan) {
  if (!(makespan <= proven_bound_.load() + kRelaxationTolerance)) return;
  raise_proven(makespan);
  request_stop(kProven);
}

Schedule SharedSearchState::best() const {
  std::lock_guard<std::mutex> lock(best_mu_);
  return best_;
}

std::string SharedSearchState::best_origin() const {
  std::lock_guard<std::mutex> lock(best_mu_);
  return best_origin_;
}

double SharedSearchState::seconds_to_best() const {
  std::lock_guard<std::mutex> lock(best_mu_);
  return seconds_to_best_;
}

void SharedSearchState::set_seconds_to_best(double s) {
  std::lock_guard<std::mutex> lock(best_mu_);
  seconds_to_best_ = s;
}

double SharedSearchState::cutoff() const {
  const double inc = incumbent_.load();
  double by_incumbent = inc == std::numeric_limits<double>::infinity() ? inc : inc * (1.0 - gap_) - kTimeEps;
  // A node whose bound is the target may still hold a schedule of exactly that makespan.
  double by_target = target_ + kTimeEps;
  if (quantum_ > 0) {
    // Half a quantum: far from the bounds' tolerances (kMinTimeQuantum), and a node whose bound
    // lies a hair below the multiple under the incumbent is kept.
    by_incumbent = std::min(by_incumbent, inc - 0.5 * quantum_);
    by_target = quantum_floor(target_, quantum_) + 0.5 * quantum_;
  }
  return std::min(by_incumbent, by_target);
}

double SharedSearchState::rounded_bound(double b) const {
  return quantum_ > 0 ? std::max(b, quantum_ceil(b, quantum_) - kTimeEps) : b;
}

void SharedSearchState::raise_proven(double b) { atomic_max(proven_bound_, rounded_bound(b)); }

void SharedSearchState::note_cut(double b) {
  // (A bound within half a quantum of the incumbent rounds up to it: cut without the gap.)
  if (gap_ > 0 && rounded_bound(b) < incumbent_.load() - kTimeEps) atomic_min(gap_cut_bound_, b);
}

void SharedSearchState::request_stop(int code) {
  assert(code != kNotStopped);
  int none = kNotStopped;
  stop_code_.compare_exchange_strong(none, code);
  stop_.store(true);
}

void SharedSearchState::count_node() {
  const std::int64_t k = ++nodes_;
  if (node_limit_ >= 0 && k >= node_limit_) request_stop(kNodeLimit);
}

void SharedSearchState::begin_resume(double gap, std::int64_t node_limit) {
  start_ = Clock::now();
  gap_ = gap;
  node_limit_ = node_limit < 0 ? -1 : nodes_.load() + node_limit;
  {
    std::lock_guard<std::mutex> lock(best_mu_);
    seconds_to_best_ = 0;
  }
  stop_code_.store(kNotStopped);
  stop_.store(false);
}

double SharedSearchState::seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

}  // namespace optpipe
