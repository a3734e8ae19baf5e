// Re-simulating schedules that differ from a base schedule only late in their lists: the local
// search's candidates (heuristics/local_search.h), each one move, or a few, away from the
// current solution.
//
// The base schedule is simulated once with its state saved every so many settled instants
// (Simulator::run_recording). The simulator reads a device's list entry only when that device's
// program counter reaches it, so a candidate whose lists agree with the base's up to the entries
// that no device had reached in a checkpoint has exactly the base's state there: the candidate
// is simulated from the latest such checkpoint (Simulator::resume) instead of from time 0. The
// result is bit for bit run(candidate, quiet) (tests/checkpointed_simulation_test.cc compares
// them on random schedules and edits). This is the classic incremental evaluation of list
// schedules by replaying from the first changed decision, as in the "partial re-simulation" of
// discrete-event scheduling (e.g. E. Nowicki, C. Smutnicki, "A Fast Taboo Search Algorithm for
// the Job Shop Problem", Management Science 42(6), 1996, which evaluates moves from the changed
// position on), with full-state checkpoints in place of their head/tail arrays.
//
// Complexity: set_base is one simulation plus K copies of the state (K = checkpoints, O(N) each
// for N ops); run(candidate) is O(L·D) to compare the lists, one copy of a state, and the
// simulation of what follows the checkpoint: on a move in the middle of the lists about half of
// a full simulation. Memory: K states of O(N) each (16 × about 200 KB at 16 × 64).
// Determinism: none added; results equal the plain simulation's.
#pragma once

#include <cstdint>
#include <vector>

#include "model/instance.h"
#include "model/schedule.h"
#include "model/simulator.h"

namespace optpipe {

class CheckpointedSimulation {
 public:
  explicit CheckpointedSimulation(const Instance& instance, int checkpoints = 16);

  // Makes `schedule` the base that later runs resume from: simulates it (quiet) saving its
  // checkpoints, and returns that simulation's result. Where `schedule` agrees with the old base
  // up to a checkpoint, the checkpoints up to it are kept and only the rest is simulated.
  SimResult set_base(const Schedule& schedule);

  // Simulates `schedule` (quiet) as Simulator::run would, from the latest checkpoint of the base
  // that it shares (from time 0 when there is none, or no base).
  SimResult run(const Schedule& schedule);

  // The state after the last run (as Simulator::snapshot()).
  const Simulator::Snapshot& snapshot() const { return sim_.snapshot(); }

  struct Stats {
    std::int64_t runs = 0;            // run() calls
    std::int64_t resumed = 0;         // of them, from a checkpoint after time 0
    std::int64_t bases = 0;           // set_base() calls
  };
  const Stats& stats() const { return stats_; }

 private:
  // The index of the latest checkpoint that `schedule` shares with the base, or -1.
  int shared_checkpoint(const Schedule& schedule);

  Simulator sim_;
  int wanted_;                                  // checkpoints per base
  Schedule base_;
  bool has_base_ = false;
  std::vector<Simulator::Snapshot> checkpoints_;
  int every_ = 1;                               // settled instants between checkpoints
  std::vector<int> first_diff_;                 // per device: first list entry that differs
  Stats stats_;
};

}  // namespace optpipe
