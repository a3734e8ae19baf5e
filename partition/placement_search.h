// Stage partitioning over the placements (issue 22, `optpipe partition --placement auto`): the
// partition search (partition_search.h) for one stage per GPU, then V, then loop (two stages per
// GPU), under one memory limit, and the placement whose best split is fastest.
//
// Why: which placement is best depends on the memory limit more than on the split. Under tight
// memory with one stage per GPU the first GPUs hold the most activations (up to one per stage
// after them) and must offload; with V each GPU holds an early and a late stage, whose
// activations are held for long and short times, so the memory is spread over the GPUs (Qi et
// al., "Zero Bubble Pipeline Parallelism", ICLR 2024, and the V-shape schedules of "Pipeline
// Parallelism with Controllable Memory", NeurIPS 2024). On GPT-3 14.6B on 16 GPUs at 17.6 GiB the
// only split that fits with one stage per GPU has a proven bound of 1704.9 ms and loop's best
// split solves to 1400.7 ms (bench/README.md, "Stage partitioning").
//
// The memory limit is resolved once, on the first placement's model ("Nact" on its default
// split), and that byte limit holds for the others. The time is shared: each placement gets the
// time left over the placements left, so one that ends early (proven, or nothing fits) leaves
// its time to the next. A placement that cannot hold the layers (too few for 2 stages per GPU) or
// where no split fits is reported with the reason and skipped. The best is the placement whose
// best split has the least makespan (ties: the earlier, so one stage per GPU wins a tie); its
// reference is the first placement's default split as solved in the same run, so the result is
// never worse than it.
// Cost: the partition searches', one after the other.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "model/instance.h"
#include "partition/partition_model.h"
#include "partition/partition_search.h"

namespace optpipe::partition {

struct PlacementRun {
  Placement placement = Placement::kOnePerDevice;
  std::optional<PartitionModel> model;    // absent: the placement does not apply (see note)
  std::optional<PartitionResult> result;  // absent: not searched (see note)
  std::string note;                       // why not, when it was not searched
  double seconds = 0;                     // the time it was given
};

struct PlacementsResult {
  std::vector<PlacementRun> runs;  // in the order searched
  int best = -1;                   // index into runs (-1: no split solved anywhere)
  double seconds = 0;

  // The best run's best trial, and the reference: the first run's default split (or its uniform
  // one when the generator has no default), as solved in the same run. nullptr when absent.
  const Trial* best_trial() const;
  const Trial* reference() const;
};

// Builds the model of a placement with the memory limit given as bytes (nullopt: as the user
// asked, for the first placement). Throws InputError when the placement cannot hold the model.
using PlacementModelFn = std::function<PartitionModel(Placement, std::optional<double> limit_bytes)>;

// Searches `placements` in order (the first is the reference; usually one, v, loop). Throws
// NoSplitFits only when no placement has a split that fits (the first one's reason).
PlacementsResult partition_placements(const std::vector<Placement>& placements, const PlacementModelFn& make,
                                      const PartitionOptions& options);

}  // namespace optpipe::partition
