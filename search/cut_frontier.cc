#include "search/cut_frontier.h"

namespace optpipe {

void CutFrontier::keep(NodePtr n) {
  const std::size_t bytes = sizeof(SearchNode) + n->path.capacity() * sizeof(std::uint32_t);
  std::lock_guard<std::mutex> lock(mu_);
  if (!complete_ || bytes_ + bytes > budget_) {
    complete_ = false;
    return;
  }
  bytes_ += bytes;
  nodes_.push_back(std::move(n));
}

bool CutFrontier::complete() const {
  std::lock_guard<std::mutex> lock(mu_);
  return complete_;
}

std::vector<NodePtr> CutFrontier::take() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<NodePtr> out = std::move(nodes_);
  nodes_.clear();
  bytes_ = 0;
  complete_ = true;
  return out;
}

}  // namespace optpipe
