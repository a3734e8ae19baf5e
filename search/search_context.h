// What every part of the branch-and-bound's tree search reads (solver.h): the instance and its
// bound problem, the options, and the shared parts (the incumbent and limits, the open nodes, the
// relaxations, the transposition table). Built by the search once the root is bounded, then
// read-only; the shared parts synchronise themselves (each header says how).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

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

// How often the nodes' device relaxations of each device cut, over the workers of one search
// (node_expansion.cc asks a device other than the root's best only now and then while its
// answers seldom cut).
struct DeviceRelaxationTallies {
  explicit DeviceRelaxationTallies(int devices)
      : calls(static_cast<std::size_t>(devices)), cuts(static_cast<std::size_t>(devices)),
        passed(static_cast<std::size_t>(devices)) {}
  std::vector<std::atomic<std::int64_t>> calls, cuts, passed;  // [d]: asked, cut, and not asked
};

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
  // the nodes ask first (-1: none), the other devices it applies to, which they ask after it
  // while none cuts (node_expansion.cc), the memo of their answers (relaxation_memo.h; each key
  // ends with its device) and their tallies.
  int relaxed_device = -1;
  std::vector<int> other_relaxed_devices;
  MonotoneMemo* device_memo = nullptr;
  DeviceRelaxationTallies* device_tallies = nullptr;
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
