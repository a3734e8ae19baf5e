// Pair tails: how long after the ends of B(s, m-2) and B(s, m-1), the last two backwards of
// stage s, the schedule can end at the earliest, through the stages below s. The single-stage
// relaxation (single_stage_relaxation.h) otherwise gives the last B only its static tail
// (bound_problem.h: the backward chain to stage 0 and the last W there), as if the stages below
// ran the last microbatch alone.
//
// Argument. In every schedule of the spec each stage t < s runs its ops one at a time on its
// device, B(t, j) before B(t, k) and W(t, j) before W(t, k) (FIFO per stage and type), each W
// after its own B, B(t, i) after B(t+1, i) + comm (j = m-2, k = m-1). So on stage t, W(t, j)
// runs either before B(t, k) or after it: the device runs the four ops as Bj Wj Bk Wk or as
// Bj Bk Wj Wk. Fix one choice per stage: the schedule's times satisfy that order's precedences,
// so every end is at least its longest path from the two sources x = end of B(s, j) and
// y = end of B(s, k). Longest paths are max-plus linear in the sources, so each choice c gives
//     makespan >= max(x + A_c, y + B_c),
// and every schedule is a point of one choice: makespan >= min_c max(x + A_c, y + B_c). Ops of
// other microbatches, memory, transfers and other stages sharing a device are ignored, which
// only lowers the paths. Without a split backward (no W) there is one order and the pair adds
// nothing beyond the static tails.
//
// The choices are 2^s; stage by stage (s-1 down to 0) each partial choice is the max-plus pair
// of B(t, j)'s end, B(t, k)'s end and the makespan so far (six numbers), and a partial choice no
// smaller anywhere than another is dropped (its completions are never below the other's). Past
// `max_states` (kMaxPairTailStates by default) partial choices the rest merge into their elementwise minimum, which is
// below each of them: weaker, still a lower bound.
//
// Why it matters: on offload-random-10 (bench/solvers/random_offload.py) stage 1 is the
// bottleneck, and its relaxation could end its last two B's 2.22 ms apart with only the last
// B's static tail (B(0, 7) and W(0, 7), 3.36 ms) after them, as if stage 0 did not also have
// to run W(0, 6) between its two B's or after B(0, 7). With the pair tails the relaxation is
// 51.18 ms, the optimum CP-SAT proves, instead of 51.11, and `optpipe solve` proves it at the
// root where 10 s of tree did not (bench/README.md, "Pair tails").
//
// Checked against a brute force over every order of the four ops per stage and against the
// makespans of simulated schedules (tests/pair_tails_test.cc).
//
// Complexity: O(s · P) per stage to build, P the partial choices kept (at most
// kMaxPairTailStates); pair_tail is O(choices kept).
#pragma once

#include <vector>

#include "bounds/bound_problem.h"

namespace optpipe {

inline constexpr int kMaxPairTailStates = 256;

// One choice's constants: makespan >= max(x + a, y + b).
struct PairTailChoice {
  double a = 0, b = 0;
};

// The choices of stage s's last pair through the stages below it, without the dominated ones
// (empty for stage 0, fewer than 2 microbatches, or without a split backward).
// At most `max_states` partial choices are kept (>= 1; the rest merge, see above).
std::vector<PairTailChoice> pair_tail_choices(const BoundProblem& problem, int s,
                                              int max_states = kMaxPairTailStates);

// min over the choices of max(x + a, y + b): a lower bound on the makespan when B(s, m-2) ends at
// x and B(s, m-1) at y (-inf when `choices` is empty).
double pair_tail(const std::vector<PairTailChoice>& choices, double x, double y);

}  // namespace optpipe
