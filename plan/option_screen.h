// The cheap screens of an option (issue 22, part 3), before any schedule: which split it starts
// from, whether that split fits the memory limit, and a lower bound on its time per global batch.
// The runner (plan_runner.h) solves options in increasing order of that bound and skips those
// whose bound already reaches the best time found, so only exact lower bounds are used here.
//
//   1. The split: the generator's default for the option's stages (even, or the Zero Bubble
//      split). Without one (e.g. 40 layers on 16 stages, where `optpipe generate` stops and
//      suggests the uniform split), the split of least cheap bound whose memory floor fits, from
//      the enumeration of splits (partition/split_enumerator.h, with a falling cutoff): on a V
//      placement the uniform split can put twice the layers of one device on another (the
//      uniform split's bound is kept in uniform_bound for comparison).
//   2. Its memory floor (partition/cheap_bound.h: static + the activations its stages must hold
//      at once, per device; frontier/memory_floor.h proves the same per-device bound exact). When
//      the default split is over the limit, the least-bound split that fits replaces it; when none
//      fits, the option does not fit and partition's explain_no_fit names the stage and by how
//      much.
//   3. The bound: partition's cheap makespan bound of the split's instance plus the least
//      data-parallel synchronisation (option_costs.h).
// Cost: O(S) for an option whose default split fits; otherwise the enumeration, bounded by
// node_limit partial splits (when it stops there, the least bound it found).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "instances/generator/generate.h"
#include "partition/cheap_bound.h"
#include "plan/option_space.h"

namespace optpipe::plan {

struct Screened {
  PlanOption option;
  bool fits = false;
  std::vector<int> split;          // the split it starts from (when it fits)
  std::string split_role;          // "default", or "least bound" (no default, or it does not fit); "uniform" when
                                   // there is no default and no split fits
  double uniform_bound = 0;        // without a default split: the uniform split's cheap bound, ms
  std::optional<gen::Generated> generated;  // that split's instance and stage costs (when it fits)
  partition::MemoryFloor floor;    // the tightest device of the starting split (or of the reference)
  std::string no_fit;              // when it does not fit: which stage's floor, by how much
  partition::CheapBound bound;     // makespan lower bound of the instance (when it fits)
  std::vector<double> sync;        // per device data-parallel synchronisation, ms
  double time_bound = 0;           // lower bound on the time per global batch, ms

  double over_limit() const { return floor.bytes - floor.limit; }  // > 0: bytes over the limit
};

Screened screen_option(const PlanRequest& request, const PlanOption& option, std::int64_t node_limit = 200000);

// Why no option fits (every one of `screened` is over the limit): the closest option (fewest
// bytes over the limit on its starting split), the device and stage whose memory floor is the
// problem there (frontier/memory_floor.h, with the proof's terms) and, over all its splits, what
// partition's explain_no_fit says. O(S L) for the closest option.
std::string explain_nothing_fits(const PlanRequest& request, const std::vector<Screened>& screened);

}  // namespace optpipe::plan
