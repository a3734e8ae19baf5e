// Last tails: how long after the ends of the last k backwards of stage s, B(s, m-k) .. B(s, m-1)
// (k = 2 or 3), the schedule can end at the earliest, through the stages below s. The
// single-stage relaxation (single_stage_relaxation.h) otherwise gives the last B only its
// static tail (bound_problem.h: the backward chain to stage 0 and the last W there), as if the
// stages below ran the last microbatch alone.
//
// Argument. In every schedule of the spec each stage t < s runs its ops one at a time on its
// device, the B's of the last k microbatches in microbatch order and their W's too (FIFO per
// stage and type), each W after its own B, B(t, i) after B(t+1, i) + comm. So on stage t the
// device runs those 2k ops in one of the interleavings of the B's and W's that keep each W
// after its B and both types in order (2 for k = 2: W(t, m-2) before or after B(t, m-1); 5 for
// k = 3; the Catalan numbers). Fix one interleaving per stage: the schedule's times satisfy its
// precedences, so every end is at least its longest path from the sources x_i = end of
// B(s, m-k+i). Longest paths are max-plus linear in the sources, so each choice c gives
//     makespan >= max_i (x_i + c_i),
// and every schedule is a point of one choice: makespan >= min_c max_i (x_i + c_i). Ops of other
// microbatches, memory, transfers and other stages sharing a device are ignored, which only
// lowers the paths. Without a split backward (no W) there is one order and the tails add
// nothing beyond the static tails. With three microbatches the bound is at least the two's (the
// first one's ops only delay the others').
//
// The choices are I^s (I interleavings a stage); stage by stage (s-1 down to 0) each partial
// choice is the max-plus form of the k B ends at the last stage placed and of the makespan so
// far, and a partial choice no smaller anywhere than another is dropped (its completions are
// never below the other's). Past `max_states` (kMaxLastTailStates by default) partial choices
// the rest merge into their elementwise minimum, which is below each of them: weaker, still a
// lower bound.
//
// Why it matters: on offload-random-10 (bench/solvers/random_offload.py) stage 1 is the
// bottleneck, and its relaxation could end its last two B's 2.22 ms apart with only the last
// B's static tail (B(0, 7) and W(0, 7), 3.36 ms) after them, as if stage 0 did not also have
// to run W(0, 6) between its two B's or after B(0, 7). With the tails of the last two the
// relaxation is 51.18 ms, the optimum CP-SAT proves, instead of 51.11; on offload-random-18
// stage 2's is 40.89 with the static tail, 42.17 with the last two, 42.73 (CP-SAT's proven
// optimum) with the last three (bench/README.md, "Last tails").
//
// Checked against a brute force over every interleaving per stage and against the makespans of
// simulated schedules (tests/last_tails_test.cc).
//
// Complexity: O(I · P · k^2) per stage to build, P the partial choices kept (at most
// kMaxLastTailStates); last_tail is O(k · choices kept).
#pragma once

#include <array>
#include <vector>

#include "bounds/bound_problem.h"

namespace optpipe {

inline constexpr int kMaxLastTailMicrobatches = 3;
inline constexpr int kMaxLastTailStates = 256;

// One choice's constants: makespan >= max_i (x_i + c[i]), i < k.
struct LastTailChoice {
  std::array<double, kMaxLastTailMicrobatches> c{};
};

struct LastTails {
  int k = 0;  // microbatches (0: nothing to add)
  std::vector<LastTailChoice> choices;
  bool empty() const { return choices.empty(); }
};

// The choices of stage s's last min(k, m) microbatches through the stages below it, without the
// dominated ones (empty for stage 0, fewer than 2 microbatches, or without a split backward).
// At most `max_states` partial choices are kept (>= 1; the rest merge, see above).
LastTails last_tail_choices(const BoundProblem& problem, int s, int k = kMaxLastTailMicrobatches,
                            int max_states = kMaxLastTailStates);

// min over the choices of max_i (x[i] + c[i]): a lower bound on the makespan when B(s, m-k+i)
// ends at x[i] (-inf when `tails` is empty).
double last_tail(const LastTails& tails, const double* x);

}  // namespace optpipe
