// The controllable-memory V schedules V-Min, V-Half and V-ZB (Qi, Wan, Amar, Lin, "Pipeline
// Parallelism with Controllable Memory", NeurIPS 2024, arXiv 2405.15362, §3 "building blocks",
// Table 1; offsets as in sail-sg/zero-bubble-pipeline-parallelism scheduler/zbv_greedy.py).
// V placement: device i holds stage i (chunk 0) and stage 2d-1-i (chunk 1).
//
// One building block places one microbatch's passes in unit slots. On device i (0-indexed, d
// devices) F chunk 0, F chunk 1, B chunk 1 and B chunk 0 sit at the offsets
//   V-Min:  (i, 2d-1-i, 2d+δ+i, 4d+δ-1-i),             δ = 2 if d mod 3 == 0 else 0
//   V-Half: (2i, 3d-2-i, 3d+δ+2i-1, 6d+δ-i-2),         δ = 3 if d is even else 0
//   V-ZB:   (4i, 6d-5-2i, 6d-4+4i, 12d-9-2i)           (offset parameters δ⁰ = 4, δ¹ = 2)
// and microbatch j adds 6j (the period: 6 unit passes per device and microbatch). For every d the
// four offsets are distinct mod 6, so blocks never collide, and every pass's slot is after the
// slots of its inputs (F chunk 0 moves 1, 2, 4 slots per device; the turn F chunk 0 -> F chunk 1
// on device d-1, the loss F chunk 1 -> B chunk 1 on device 0 and the turn B chunk 1 -> B chunk 0
// on device d-1 each take one slot or more).
//
// Then the paper's "reorder" of the warm-up and the cool-down (sail-sg zbv_greedy.py, reorder()):
// visiting all passes in slot order, a warm-up pass (before device 0's first B chunk 0) or a
// cool-down pass (after the F chunk 0 of the last microbatch) moves to the earliest free slot
// after its inputs where its device's peak, counted the paper's way (F +1 chunk activation, W -1),
// stays within the repeated blocks' peak; once with the Ws in their slots, then once more for the
// cool-down with the Ws left to the free slots. For V-ZB this removes the whole bubble at equal
// times. Passes only move earlier and behind passes already placed, so the slots remain a valid
// unit-time timetable.
//
// Finally each W takes the first free slot after its B on its device, Ws placed in the order of
// their B slots (one FIFO queue over both chunks; the steady state has exactly two free slots per
// period for the two Ws), and a device's list is its passes sorted by slot; the simulator runs
// them as soon as possible with the real times (the paper's "squeeze"). Since the slots are a
// valid unit-time timetable, the lists are FIFO per stage and type and never deadlock on their
// own, whatever the real times.
//
// Unsplit backward: the fused backward runs in B's slot and there is no W (same order, still
// valid; the memory figures then differ from the paper's).
//
// Peak activation, in microbatches of one device's worth (M_B = both chunks), when W frees the
// activation (M_W = M_B, the paper's count): V-Min (d+4)//3, V-Half (d+2)//2, V-ZB d; a smaller
// M_W can only lower it. Bubble at equal times about 4d, 3d and 0 unit slots (1F1B: 6(d-1)),
// i.e. about 2/3, 1/2 and 0 of 1F1B's.
// O(d·m log(d·m)) for the blocks; the reorder tries O(d) slots for each of the O(d²) warm-up and
// cool-down passes, each try recounting a device's peak in O(m + d): O(d³·(m + d)) in all.
#pragma once

#include <array>
#include <optional>
#include <string>

#include "heuristics/heuristic.h"

namespace optpipe {

enum class VShape { kMin, kHalf, kZb };

// Slots of (F chunk 0, F chunk 1, B chunk 1, B chunk 0) of microbatch 0 on device i of d.
std::array<int, 4> v_shape_offsets(VShape shape, int d, int i);

// The lists of the building-block schedule `shape` (the instance must have the V placement),
// with or without the warm-up/cool-down reorder; nullopt with *why set if two passes would
// share a slot (impossible for the three shapes).
std::optional<Schedule> v_shape_schedule(const Instance& instance, VShape shape, bool reordered,
                                         std::string* why);

class VShapeHeuristic : public Heuristic {
 public:
  explicit VShapeHeuristic(VShape shape) : shape_(shape) {}
  Built build(const Instance& instance, const RunLimits& limits) const override;
  using Heuristic::build;

 private:
  VShape shape_;
};

class VMin final : public VShapeHeuristic {
 public:
  VMin() : VShapeHeuristic(VShape::kMin) {}
  std::string name() const override { return "v-min"; }
  std::string title() const override { return "V-Min"; }
  std::string description() const override {
    return "V building block with about 1/3 of 1F1B's activation memory (Controllable Memory, "
           "arXiv 2405.15362, §3); V placement";
  }
};

class VHalf final : public VShapeHeuristic {
 public:
  VHalf() : VShapeHeuristic(VShape::kHalf) {}
  std::string name() const override { return "v-half"; }
  std::string title() const override { return "V-Half"; }
  std::string description() const override {
    return "V building block with about 1/2 of 1F1B's activation memory (Controllable Memory, "
           "arXiv 2405.15362, §3); V placement";
  }
};

class VZb final : public VShapeHeuristic {
 public:
  VZb() : VShapeHeuristic(VShape::kZb) {}
  std::string name() const override { return "v-zb"; }
  std::string title() const override { return "V-ZB"; }
  std::string description() const override {
    return "V building block with 1F1B's memory and about zero bubble (Controllable Memory, "
           "arXiv 2405.15362, §3); V placement";
  }
};

}  // namespace optpipe
