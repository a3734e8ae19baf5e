#include "search/node_pool.h"

#include <algorithm>
#include <cassert>
#include <iterator>

namespace optpipe {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}

NodePool::NodePool(int workers) : working_bound_(static_cast<std::size_t>(workers)) {
  for (auto& wb : working_bound_) wb.store(kInf);
}

void NodePool::push_locked(NodePtr n) {
  heap_.push_back(std::move(n));
  std::push_heap(heap_.begin(), heap_.end(), order_);
}

NodePtr NodePool::pop_locked() {
  std::pop_heap(heap_.begin(), heap_.end(), order_);
  NodePtr n = std::move(heap_.back());
  heap_.pop_back();
  return n;
}

void NodePool::push(NodePtr n) {
  assert(n);
  std::lock_guard<std::mutex> lock(mu_);
  push_locked(std::move(n));
}

NodePtr NodePool::pop(int w) {
  std::lock_guard<std::mutex> lock(mu_);
  if (heap_.empty()) return nullptr;
  NodePtr n = pop_locked();
  working_bound_[static_cast<std::size_t>(w)].store(n->bound);
  ++busy_;
  return n;
}

std::vector<NodePtr> NodePool::pop_many(int w, std::size_t k, bool held, double held_min) {
  std::vector<NodePtr> out;
  std::lock_guard<std::mutex> lock(mu_);
  while (out.size() < k && !heap_.empty()) out.push_back(pop_locked());
  if (!out.empty()) {
    // The first is the smallest unless some lie below the floor (set_floor): the least of all.
    double least = held_min;
    for (const NodePtr& n : out) least = std::min(least, n->bound);
    working_bound_[static_cast<std::size_t>(w)].store(least);
    if (!held) ++busy_;
  }
  return out;
}

void NodePool::release(int w) {
  std::lock_guard<std::mutex> lock(mu_);
  working_bound_[static_cast<std::size_t>(w)].store(kInf);
  --busy_;
  assert(busy_ >= 0);
}

void NodePool::lower_working_bound(int w, double b) {
  auto& wb = working_bound_[static_cast<std::size_t>(w)];
  wb.store(std::min(wb.load(), b));
}

std::size_t NodePool::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return heap_.size();
}

bool NodePool::finished() const {
  std::lock_guard<std::mutex> lock(mu_);
  return heap_.empty() && busy_ == 0;
}

void NodePool::set_floor(double proven, double tie) {
  std::lock_guard<std::mutex> lock(mu_);
  proven_ = proven;
  order_.floor = proven + tie;
  std::make_heap(heap_.begin(), heap_.end(), order_);
}

double NodePool::min_bound(double cap) const {
  double b = cap;
  std::lock_guard<std::mutex> lock(mu_);
  if (!heap_.empty()) {
    // The top has the smallest bound unless it lies below the floor; then every node below the
    // floor ties with it, and all of them are at least `proven_`.
    const double top = heap_.front()->bound;
    b = std::min(b, top > order_.floor ? top : std::min(top, proven_));
  }
  for (const auto& wb : working_bound_) b = std::min(b, wb.load());
  return b;
}

NodePool::Dropped NodePool::drop_at_or_above(double cutoff, std::vector<NodePtr>* dropped) {
  Dropped d;
  std::lock_guard<std::mutex> lock(mu_);
  auto keep_end = std::partition(heap_.begin(), heap_.end(), [&](const NodePtr& n) { return n->bound < cutoff; });
  for (auto it = keep_end; it != heap_.end(); ++it) d.smallest = std::min(d.smallest, (*it)->bound);
  d.count = static_cast<std::size_t>(heap_.end() - keep_end);
  if (d.count == 0) return d;
  if (dropped) std::move(keep_end, heap_.end(), std::back_inserter(*dropped));
  heap_.erase(keep_end, heap_.end());
  std::make_heap(heap_.begin(), heap_.end(), order_);
  return d;
}

}  // namespace optpipe
