#include "search/search_monitor.h"

#include <algorithm>
#include <chrono>
#include <limits>

#include "model/simulator.h"

namespace optpipe {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}

double global_bound(SharedSearchState& shared, const NodePool& pool) {
  const double inc = shared.incumbent();
  // With a target, an exhausted pool proves every schedule above it (or the incumbent optimal).
  const double b = std::min(pool.min_bound(std::min(inc, shared.target())), shared.gap_cut_bound());
  shared.raise_proven(b);
  return std::min(std::max(b, shared.proven_bound()), inc);
}

SolveProgress search_progress(SharedSearchState& shared, const NodePool& pool) {
  SolveProgress p;
  p.seconds = shared.seconds();
  p.nodes = shared.nodes();
  p.open = static_cast<std::int64_t>(pool.size());
  p.incumbent = shared.incumbent();
  p.bound = global_bound(shared, pool);
  p.gap = p.incumbent == kInf ? kInf : std::max(0.0, (p.incumbent - p.bound) / p.incumbent);
  return p;
}

SearchMonitor::SearchMonitor(SharedSearchState& shared, NodePool& pool, const SolveOptions& options)
    : shared_(shared), pool_(pool), opt_(options), pruned_at_(shared.incumbent()) {}

SearchMonitor::~SearchMonitor() { finish(); }

void SearchMonitor::start() { thread_ = std::thread([this] { loop(); }); }

void SearchMonitor::finish() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void SearchMonitor::drop_useless_nodes() {
  const double inc = shared_.incumbent();
  if (!(inc < pruned_at_)) return;
  pruned_at_ = inc;
  std::vector<NodePtr> dropped;
  const NodePool::Dropped d = pool_.drop_at_or_above(shared_.cutoff(), opt_.keep_cut ? &dropped : nullptr);
  for (NodePtr& n : dropped) opt_.keep_cut->keep(std::move(n));
  if (d.count == 0) return;
  shared_.note_cut(d.smallest);
  dropped_ += static_cast<std::int64_t>(d.count);
}

void SearchMonitor::loop() {
  double next_report = opt_.progress_interval;
  long ticks = 0;
  std::unique_lock<std::mutex> lock(mu_);
  while (!done_) {
    cv_.wait_for(lock, std::chrono::milliseconds(10));
    if (done_) break;
    const double now = shared_.seconds();
    if (now >= opt_.time_limit) shared_.request_stop(kTimeLimit);
    if (opt_.stop && opt_.stop->load()) shared_.request_stop(kInterrupted);
    const bool report = opt_.on_progress && now >= next_report;
    // Every 100 ms (or at a report): once no open node can beat the incumbent, the rest of the
    // pool would only be popped and pruned.
    if (report || ++ticks % 10 == 0) {
      drop_useless_nodes();
      const SolveProgress p = search_progress(shared_, pool_);
      if (p.incumbent < kInf && p.bound >= p.incumbent - kTimeEps) shared_.request_stop(kProven);
      if (opt_.gap > 0 && p.incumbent < kInf && p.gap <= opt_.gap) shared_.request_stop(kGapReached);
      if (report) {
        opt_.on_progress(p);
        next_report = now + opt_.progress_interval;
      }
    }
  }
}

}  // namespace optpipe
