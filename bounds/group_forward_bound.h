// PCIe group forward bound: in the fill, the stages of a PCIe group make room for their
// forwards by offloading through the one D2H channel they share. A root bound (no decision
// taken).
//
// Memory precedences (memory_precedence.h, rule F) give each forward F(s, j) a head: when it
// starts, the earlier microbatches of s fit in the stage's room, so enough of them have ended
// their B, their W, or a full offload. Rule F lets those offloads use the channel alone. But in a
// PCIe group every stage s <= s' of the group has started F(s, j) before F(s', j) starts (the
// forward chain), each under its own rule F, and all their offloads run one at a time on the
// group's D2H channel (spec §4). On `optpipe generate --model gpt3-14.6b --devices 16
// --microbatches 8 --memory-limit 4act` (4 activations of room on stages 1-14, offloads of
// 10.7 ms, every B at least 99 ms after its F) stages 2 and 3 need 4 offloads each before their
// last forwards, 8 on their shared channel, 86 ms, where rule F counts 4 each, 43 ms side by side.
// CP-SAT proves that instance's optimum at least 226.88 ms (bench/solvers, its relaxation), our
// other bounds give 197.52; with every device in its own group, the optimum is 201.50.
//
// The bound (this project; rule F with the group's stages on one machine, cf. the one-machine
// relaxations of Carlier, EJOR 11(1), 1982). For a stage s' and a microbatch j, let P be the
// stages s <= s' whose device is in the group of s''s device, and t the start of F(s', j). For
// each s in P, at F(s, j)'s start (<= t), with b B ends and w <= b W ends among microbatches
// 0..j-1 of s (prefixes, FIFO), rule F's inequality hold_w·(b - w) + hold_f·(j - b - o) <= room
// needs o full offloads (level 1) of distinct microbatches of s, each after its F, ended by then.
// Weaker, and so still a lower bound: the B and W ends by t (not by F(s, j)'s start), o the least
// count over every (w, b) those allow (a larger w never needs more; b any prefix whose B can have
// ended by t), and the k-th offload of s released at F(s, k)'s earliest finish, whichever
// microbatch it is (the zeroed ones are o distinct microbatches, the k-th of them finishing its F
// no earlier than F(s, k - 1)). All these offloads are jobs on the group's D2H channel, ended by t;
// their earliest common completion is the earliest-release-first schedule (optimal for
// 1|r_j|C_max). So t >= the least instant at which that completion is at most t, found by walking
// the intervals between the B and W ends' lower bounds (the counts are constant inside one). Then
// the makespan is at least t + F + the static tail of F(s', j) (bound_problem.h).
//
// With P = {s'} this is rule F with release times rounded down; the bound gains where the group
// has several stages under memory pressure in the fill. In the steady state the B's release room
// as fast as the rule lets them, so it adds little to instances with many microbatches (the memory
// energy bounds see those).
//
// Complexity: O(S·m) heads, each O(|P|·m) breakpoints of O(|P|·m) work: O(S·m³·|P|²) at the root.
#pragma once

#include <vector>

#include "bounds/bound_problem.h"

namespace optpipe {

struct GroupForwardBound {
  double bound = 0;   // the largest t + F + tail over every stage s' and microbatch j (0: none)
  int stage = -1;     // where it is reached (-1: none)
  int microbatch = -1;
};

// The bound at the root from the root's heads `head` [op] (compute_heads with nothing decided).
GroupForwardBound group_forward_bound(const BoundProblem& problem, const std::vector<double>& head);

// The head of F(s', j) this bound derives (the least t above), at least head[F(s', j)].
double group_forward_head(const BoundProblem& problem, const std::vector<double>& head, int s_prime, int j);

}  // namespace optpipe
