#include "search/dive_worker.h"

#include <algorithm>
#include <thread>

namespace optpipe {

DiveWorker::DiveWorker(const SearchContext& ctx, const NodeExpander& expander, int index)
    : ctx_(ctx), expander_(expander), index_(index), w_(ctx.inst) {}

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

void DiveWorker::dive(NodePtr n) {
  Simulator::Step step = expander_.replay(w_, *n);
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
