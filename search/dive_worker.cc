#include "search/dive_worker.h"

#include <algorithm>
#include <cstdint>
#include <thread>

namespace optpipe {

namespace {
constexpr std::size_t kKeptStates = 64;     // kept along a dive (stride_)
constexpr std::size_t kReplayKeepEvery = 8;  // ... and along a replay, every 8 strides

// How many first decisions paths a and b share, at most `most`.
template <class A, class B>
std::size_t common_prefix(const A& a, const B& b, std::size_t most) {
  most = std::min({most, a.size(), b.size()});
  std::size_t c = 0;
  while (c < most && a[c] == b[c]) ++c;
  return c;
}
}  // namespace

DiveWorker::DiveWorker(const SearchContext& ctx, const NodeExpander& expander, int index)
    : ctx_(ctx), expander_(expander), index_(index), w_(ctx.inst) {
  // At most about kKeptStates states along a path (each holds the simulation's per-op arrays:
  // ~100 KB at 2048 ops), so the dives keep one every stride_ decisions.
  const std::size_t decisions = static_cast<std::size_t>(ctx.problem.S) * ctx.problem.m * ctx.problem.types;
  stride_ = std::max<std::size_t>(1, (decisions + kKeptStates - 1) / kKeptStates);
}

SolveStats DiveWorker::run() {
  while (!ctx_.shared.stopping()) {
    NodePtr n = ctx_.pool.pop(index_);
    if (!n) {
      // Over when no open node is left and no worker holds one; otherwise another worker may
      // still add nodes: wait a moment.
      if (ctx_.pool.finished()) break;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      continue;
    }
    dive(std::move(n));
    ctx_.pool.release(index_);
  }
  return w_.final_stats();
}

Simulator::Step DiveWorker::restore_or_replay(const SearchNode& n) {
  const auto& p = n.path;
  // The deepest kept state on the common prefix of p and path_.
  std::size_t c = common_prefix(p, path_, kept_valid_.empty() ? 0 : kept_valid_.size() - 1);
  while (c > 0 && !kept_valid_[c]) --c;
  Simulator::Step step;
  if (c == 0 && (kept_valid_.empty() || !kept_valid_[0])) {
    w_.sim.start_open();
    step = w_.sim.advance();
    kept_valid_.assign(1, 0);
    path_.clear();
  } else {
    // States past c belong to another branch now.
    kept_valid_.resize(c + 1);
    path_.resize(c);
    w_.sim.restore(kept_[c].state);
    step = kept_[c].step;
  }
  // On the way down, a state every kReplayKeepEvery decisions for the nodes that share them.
  for (std::size_t x = c; x < p.size(); ++x) {
    w_.sim.append(step.device, ctx_.codec.decode(p[x]));
    step = w_.sim.advance();
    path_.push_back(p[x]);
    const std::size_t d = x + 1;
    if (d % (kReplayKeepEvery * stride_) == 0 && d < p.size()) {
      if (kept_.size() < d + 1) kept_.resize(d + 1);
      kept_valid_.resize(d + 1, 0);
      kept_[d].state = w_.sim.snapshot();
      kept_[d].step = step;
      kept_valid_[d] = 1;
    }
  }
  return step;
}

void DiveWorker::keep_state(const SearchNode& n, const Simulator::Step& step) {
  const std::size_t d = n.path.size();
  if (d % stride_ != 0) return;
  // Only along one path: the states past what path_ shares with n's path are dropped.
  const std::size_t c = common_prefix(path_, n.path, d);
  if (c < path_.size()) kept_valid_.resize(std::min(kept_valid_.size(), c + 1));
  if (kept_.size() < d + 1) kept_.resize(d + 1);
  kept_valid_.resize(d + 1, 0);
  std::swap(kept_[d].state, w_.parent);
  kept_[d].step = step;
  kept_valid_[d] = 1;
  path_ = n.path;
}

void DiveWorker::dive(NodePtr n) {
  Simulator::Step step = restore_or_replay(*n);
  std::vector<NodePtr> children;
  std::vector<Action> actions;
  while (n && !ctx_.shared.stopping()) {
    if (n->bound >= ctx_.shared.cutoff()) {
      ctx_.shared.note_cut(n->bound);
      ++w_.stats.pruned_bound;
      keep_cut_node(ctx_, n);
      return;
    }
    w_.stats.count_node(n->depth);
    ctx_.shared.count_node();
    expander_.expand(w_, *n, step, children, actions);
    if (children.empty()) return;
    // The dive follows the smallest bound; at equal bounds a list-scheduling rule: the child
    // whose action can start first, B before W before R before F at equal times. (Following
    // the rule first was tried: it proved v-4x8 no more, and found no better leaves elsewhere.)
    std::vector<std::size_t> order(children.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      if (children[a]->bound != children[b]->bound) return children[a]->bound < children[b]->bound;
      return children[a]->priority < children[b]->priority;
    });
    if (ctx_.pool.size() > ctx_.max_open) {
      // The pool is full: finish these children depth-first here, keeping them out of it.
      ++w_.stats.pool_full;
      std::vector<NodePtr> stack;
      for (auto it = order.rbegin(); it != order.rend(); ++it) stack.push_back(std::move(children[*it]));
      local_dfs(stack);
      return;
    }
    for (std::size_t k = 1; k < order.size(); ++k) ctx_.pool.push(std::move(children[order[k]]));
    // Continue with the best child: re-run its decision from the parent's state.
    w_.sim.restore(w_.parent);
    keep_state(*n, step);
    w_.sim.append(step.device, actions[order[0]]);
    step = w_.sim.advance();
    n = std::move(children[order[0]]);
    ctx_.pool.lower_working_bound(index_, n->bound);
    children.clear();
    actions.clear();
  }
  if (n) ctx_.pool.push(std::move(n));  // stopped mid-dive: keep it open for the bound
}

void DiveWorker::local_dfs(std::vector<NodePtr>& stack) {
  std::vector<NodePtr> children;
  std::vector<Action> actions;
  while (!stack.empty()) {
    if (ctx_.shared.stopping()) {
      for (auto& n : stack) ctx_.pool.push(std::move(n));
      stack.clear();
      return;
    }
    NodePtr n = std::move(stack.back());
    stack.pop_back();
    if (n->bound >= ctx_.shared.cutoff()) {
      ctx_.shared.note_cut(n->bound);
      ++w_.stats.pruned_bound;
      keep_cut_node(ctx_, n);
      continue;
    }
    w_.stats.count_node(n->depth);
    ctx_.shared.count_node();
    const Simulator::Step step = expander_.replay(w_, *n);
    expander_.expand(w_, *n, step, children, actions);
    std::sort(children.begin(), children.end(), [](const NodePtr& a, const NodePtr& b) {
      return a->bound > b->bound;  // the best child last, on top of the stack
    });
    for (auto& c : children) stack.push_back(std::move(c));
    children.clear();
    actions.clear();
  }
}

}  // namespace optpipe
