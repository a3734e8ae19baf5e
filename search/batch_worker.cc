#include "search/batch_worker.h"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <limits>
#include <stdexcept>
#include <thread>

namespace optpipe {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}

std::unique_ptr<BatchedBounds> make_batch_bounds(BoundsMode backend, const BoundProblem& problem, int batch_size) {
  // A batch holds the children of up to batch_size lanes: about 8 each.
  const int lanes = batch_size > 0 ? batch_size : 1024;
  return backend == BoundsMode::kGpu ? make_cuda_bounds(problem, 8 * lanes) : make_tbb_bounds(problem);
}

BatchWorker::BatchWorker(const SearchContext& ctx, const NodeExpander& expander, int index)
    : ctx_(ctx), expander_(expander), index_(index), w_(ctx.inst) {
  w_.batch = make_batch_bounds(ctx.backend, ctx.problem, ctx.opt.batch_size);
}

double BatchWorker::held_bound(double b) const {
  for (const auto& n : stack_) b = std::min(b, n->bound);
  for (const auto& n : lanes_) {
    if (n) b = std::min(b, n->bound);
  }
  return b;
}

bool BatchWorker::refill(std::size_t want) {
  while (lanes_.size() < want && !stack_.empty()) {
    lanes_.push_back(std::move(stack_.back()));
    stack_.pop_back();
  }
  if (lanes_.size() < want) {
    std::vector<NodePtr> taken = ctx_.pool.pop_many(index_, want - lanes_.size(), held_, held_bound(kInf));
    if (!taken.empty()) held_ = true;
    for (auto& n : taken) lanes_.push_back(std::move(n));
  }
  return !lanes_.empty();
}

void BatchWorker::expand_lanes() {
  w_.nodes.clear();
  pending_.clear();
  first_child_.assign(1, 0);
  for (auto& n : lanes_) {
    if (!ctx_.shared.stopping() && n->bound < ctx_.shared.cutoff()) {
      w_.stats.count_node(n->depth);
      ctx_.shared.count_node();
      const Simulator::Step step = expander_.replay(w_, *n);
      expander_.expand(w_, *n, step, children_, actions_);  // children carry their makespans so far
      for (auto& c : children_) pending_.push_back(std::move(c));
      children_.clear();
      actions_.clear();
    } else if (!ctx_.shared.stopping()) {
      ctx_.shared.note_cut(n->bound);
      ++w_.stats.pruned_bound;
      keep_cut_node(ctx_, n);
      n.reset();
    }
    first_child_.push_back(pending_.size());
  }
}

void BatchWorker::evaluate_pending() {
  if (pending_.empty()) {
    w_.kept.clear();
    return;
  }
  if (w_.nodes.n != static_cast<int>(pending_.size())) throw std::logic_error("batch out of step with its nodes");
  const auto t0 = std::chrono::steady_clock::now();
  w_.batch->compute_bounds(w_.nodes, w_.batch_bounds);
  ++w_.stats.batches;
  w_.stats.batched_nodes += w_.nodes.n;
  for (std::size_t i = 0; i < pending_.size(); ++i) {
    pending_[i]->bound = std::max(pending_[i]->bound, w_.batch_bounds[i]);
    w_.batch_bounds[i] = pending_[i]->bound;
  }
  w_.batch->prune(w_.batch_bounds, ctx_.shared.cutoff(), w_.kept);
  w_.stats.bound_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

bool BatchWorker::advance_lanes() {
  const bool pool_full = ctx_.pool.size() > ctx_.max_open;
  if (pool_full) ++w_.stats.pool_full;
  next_lanes_.clear();
  std::size_t next_kept = 0;
  for (std::size_t k = 0; k + 1 < first_child_.size(); ++k) {
    std::size_t best = pending_.size();
    for (std::size_t i = first_child_[k]; i < first_child_[k + 1]; ++i) {
      if (next_kept < w_.kept.size() && w_.kept[next_kept] == static_cast<int>(i)) {
        ++next_kept;
        if (best == pending_.size() || pending_[i]->bound < pending_[best]->bound ||
            (pending_[i]->bound == pending_[best]->bound && pending_[i]->priority < pending_[best]->priority)) {
          best = i;
        }
      } else {
        ctx_.shared.note_cut(pending_[i]->bound);
        ++w_.stats.pruned_bound;
        keep_cut_node(ctx_, pending_[i]);
        pending_[i].reset();
      }
    }
    for (std::size_t i = first_child_[k]; i < first_child_[k + 1]; ++i) {
      if (!pending_[i] || i == best) continue;
      if (pool_full) {
        stack_.push_back(std::move(pending_[i]));
      } else {
        ctx_.pool.push(std::move(pending_[i]));
      }
    }
    if (best != pending_.size()) next_lanes_.push_back(std::move(pending_[best]));
  }
  assert(next_kept == w_.kept.size());
  const bool ended = next_lanes_.size() < lanes_.size();
  lanes_.swap(next_lanes_);
  return ended;
}

SolveStats BatchWorker::run() {
  std::size_t ramp = 1;  // doubles whenever a dive ends, so that the first dives reach leaves soon
  while (!ctx_.shared.stopping()) {
    const std::size_t cap = ctx_.opt.batch_size > 0 ? static_cast<std::size_t>(ctx_.opt.batch_size) : 1024;
    const std::size_t want =
        std::clamp<std::size_t>(ctx_.pool.size() / static_cast<std::size_t>(ctx_.threads), 1, std::min(cap, ramp));
    if (!refill(want)) {
      if (held_) ctx_.pool.release(index_);
      held_ = false;
      if (ctx_.pool.finished()) break;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      continue;
    }
    expand_lanes();
    if (ctx_.shared.stopping()) break;  // the lanes (expanded or not) go back to the pool below
    evaluate_pending();
    if (advance_lanes()) ramp = std::min<std::size_t>(2 * ramp, 1 << 20);
    // Everything the worker dropped is explored or in the pool now: its working bound may rise.
    ctx_.pool.set_working_bound(index_, held_bound(kInf));
  }
  for (auto& n : stack_) ctx_.pool.push(std::move(n));  // stopped: what is left stays open for the bound
  for (auto& n : lanes_) {
    if (n) ctx_.pool.push(std::move(n));
  }
  if (held_) ctx_.pool.release(index_);
  return w_.final_stats();
}

}  // namespace optpipe
