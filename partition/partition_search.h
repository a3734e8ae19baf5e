// Stage partitioning (issue 22): the split of the layers into stages whose solved schedule is
// fastest, each split's makespan being what the solve pipeline (solve/solve_pipeline.h) finds
// for its instance under the memory limit, offload included.
//
// The search (a branch-and-bound over splits whose nodes are solves, after the cheap bounds):
//   1. the reference splits (reference_splits.h: default, uniform, Megatron's) are built, and the
//      candidate splits enumerated (split_enumerator.h): those whose memory floor fits and whose
//      cheap bound (cheap_bound.h) is below the cutoff;
//   2. exhaustive, when the enumeration is complete and small (at most exhaustive_max splits and
//      exhaustive_ops compute ops in all): every candidate in increasing order of its bound,
//      references first, solved unless its bound already reaches the best makespan found (it
//      cannot beat it). The best split is proven best when every other split's bound (cheap, or
//      the solve's) reaches its makespan: no other split can be faster. With exact solves (small
//      instances prove in milliseconds) that is the best over all splits;
//   3. otherwise local: 30% of the time screens splits by their best heuristic schedule
//      (heuristics/registry.h, a deadline of 1% of the time limit each), starting from the
//      references and the split of least bound, and improves them by moving one layer from one
//      stage to another (first improvement, moves between neighbouring stages first; a move is
//      skipped when its floor does not fit or its bound reaches the best screened makespan).
//      Then the references are solved, then the best screened splits (at most top_solves, only
//      those within 15% of the best heuristic makespan, which the solve pipeline rarely gains
//      over the heuristics), then the best solved split's one-layer moves are screened and the
//      best of them solved (refine_solves rounds). The time left is shared equally among the
//      solves planned. Last, the enumeration runs again with the best makespan as its cutoff:
//      when every split it visits (those whose bound is below that makespan) is the best one or
//      was solved to a bound that reaches it, the best split is proven best here too.
// The best split is the solved one with the least makespan (ties: the earlier, so the default
// split wins a tie): never worse than the default split as solved in the same run.
// The time limit covers everything; solves share what is left equally among those planned.
// Sources: branch-and-bound with a relaxation bound (Land and Doig 1960) over the splits; the
// least-bound split is the balanced partition of PipeDream's planner (Narayanan et al., SOSP
// 2019) and of GPipe (Huang et al. 2019) with the fill and drain added; first-improvement local
// search in the one-move neighbourhood (Aarts and Lenstra, "Local Search in Combinatorial
// Optimization", 1997). What is new here is that each split is judged by its solved schedule,
// memory and offload included, rather than by its busiest stage.
// Cost: the enumeration is bounded by its node limit; each solve by its time share.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/instance.h"
#include "model/schedule.h"
#include "partition/cheap_bound.h"
#include "partition/partition_model.h"

namespace optpipe::partition {

struct PartitionOptions {
  double time_limit = 60;             // seconds for the whole search
  int threads = 0;                    // solver threads (0: all)
  const std::atomic<bool>* stop = nullptr;
  int exhaustive_max = 64;            // see step 2
  std::int64_t exhaustive_ops = 20000;
  int top_solves = 3;                 // local: screened splits solved besides the references
  int refine_solves = 2;              // local: neighbours of the best solved split solved after them
  std::int64_t node_limit = 2'000'000;  // the enumeration's
  std::function<void(const std::string&)> progress;  // one line per step (the CLI prints it on stderr)
};

// One split the search looked at.
struct Trial {
  std::vector<int> split;
  std::vector<std::string> roles;     // "default", "uniform", "megatron", "least bound", "best"
  CheapBound bound;
  MemoryFloor floor;                  // the tightest device's
  std::optional<double> heuristic;    // best heuristic makespan (local screening), ms
  std::string heuristic_name;
  bool solved = false;
  double makespan = std::numeric_limits<double>::infinity();
  double solved_bound = 0;            // the solve's proven bound, at least the cheap bound
  std::string status;                 // the solve's: optimal, feasible, infeasible
  double seconds = 0;                 // the solve's wall time
  std::string note;                   // why it was not solved, when it was not

  bool fits() const { return floor.fits(); }
  bool has_role(const std::string& role) const;
};

struct PartitionResult {
  std::vector<Trial> trials;          // references first, then in the order tried
  int best = -1;                      // index into trials
  std::optional<Instance> instance;   // the best split's
  std::optional<Schedule> schedule;   // its solved schedule
  std::string mode;                   // "exhaustive" or "local"
  bool proven = false;                // every other split's bound (cheap or solved) reaches the best makespan
  std::int64_t candidates = 0;        // splits the enumeration passed (complete or not)
  bool enumeration_complete = false;
  int pruned = 0;                     // exhaustive: candidates cut by their bound
  double seconds = 0;

  const Trial* find(const std::string& role) const;
  // The split the others are measured against: the default, else the uniform one.
  const Trial* baseline() const;
  // The best trial (nullptr when none).
  const Trial* best_trial() const { return best >= 0 ? &trials[static_cast<std::size_t>(best)] : nullptr; }
};

// No split fits the memory limit; what() names the stage whose floor is the problem and by how
// much (the CLI exits 1 with it).
class NoSplitFits : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

PartitionResult partition_search(const PartitionModel& model, const PartitionOptions& options);

// Why no split fits (the text of NoSplitFits). O(S L).
std::string explain_no_fit(const PartitionModel& model);

}  // namespace optpipe::partition
