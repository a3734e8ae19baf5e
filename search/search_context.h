// What every part of the branch-and-bound's tree search reads (solver.h): the instance and its
// bound problem, the options, and the shared parts (the incumbent and limits, the open nodes, the
// relaxations, the transposition table). Built by the search once the root is bounded, then
// read-only; the shared parts synchronise themselves (each header says how).
#pragma once

#include <cstddef>

#include "bounds/bound_problem.h"
#include "bounds/last_tails.h"
#include "model/instance.h"
#include "search/node_pool.h"
#include "search/relaxation_memo.h"
#include "search/search_node.h"
#include "search/search_shared.h"
#include "search/solver.h"
#include "search/stage_relaxations.h"
#include "search/transposition.h"

namespace optpipe {

struct SearchContext {
  const Instance& inst;
  const BoundProblem& problem;
  const SolveOptions& opt;
  const ActionCodec& codec;
  bool can_offload = false;
  int threads = 1;
  BoundsMode backend = BoundsMode::kCpu;  // resolved: kCpu, kTbb or kGpu
  std::size_t max_open = 0;  // pool size beyond which workers explore depth-first locally
  SharedSearchState& shared;
  NodePool& pool;
  StageRelaxations& relaxations;
  TranspositionTable* tt = nullptr;  // null when options.transposition is off
  // The device whose relaxation gave the largest root value (bounds/device_relaxation.h), which
  // the nodes ask too (-1: none), and the memo of their answers (relaxation_memo.h).
  int relaxed_device = -1;
  MonotoneMemo* device_memo = nullptr;
  // Every stage's last tails (bounds/last_tails.h), computed once for the nodes' device
  // relaxations (empty when relaxed_device is -1).
  const std::vector<LastTails>* last_tails = nullptr;
};

// A node cut by its bound: into SolveOptions::keep_cut when the search keeps them (then `n` is
// moved from), else dropped.
inline void keep_cut_node(const SearchContext& ctx, NodePtr& n) {
  if (ctx.opt.keep_cut && n) ctx.opt.keep_cut->keep(std::move(n));
}

}  // namespace optpipe
