// A periodic template: every device repeats the same pattern once per cycle of c ms, microbatch
// j's ops c·j later than microbatch 0's; the lists are the template's ops in planned time order,
// and the offloads are chosen where the planned memory would overflow. Any placement: a device
// with several stages (V, loop) fits all of their ops into its cycle.
//
// Source: cyclic (modulo) scheduling, B. R. Rau, "Iterative modulo scheduling", MICRO-27 1994
// (an iteration's ops placed at offsets whose residues modulo the initiation interval do not
// collide on a resource), and C. Hanen, A. Munier, "Cyclic scheduling on parallel processors",
// in Scheduling Theory and its Applications, Wiley 1995. Applied here to the pipeline: the
// forward offsets follow the F chain (a_{s+1} = a_s + F_s + comm_s), each backward offset is the
// earliest after the later stage's (b_s >= b_{s+1} + B_{s+1} + comm_s, and >= a_s + F_s) whose
// residue modulo c does not overlap the forward's on the same device, and the W goes into the
// first gap after the B that holds it (else the B moves to right after the F, where the rest of
// the cycle is one gap of c - F - B >= W). So the gap between F(s, j) and B(s, j) is the latency
// of the pipeline above s plus the waits for free residues (zero-bubble schedules with cycle
// F + B + W are the special case of the Zero Bubble paper, arXiv 2401.10241, §3). On a device
// with several stages each op takes the first residue at or after its chain's time that is free
// of the device's ops placed before it (forwards in stage order, then backwards and their W's
// from the last stage down), as in Rau's iterative modulo scheduling; where the free residues
// are in pieces too short for an op, that cycle has no template (periodic.h tries longer ones).
//
// Memory plan (periodic_memory_plan.h): per device, over all its stages, the offloads where the
// planned memory would pass the limit, each booked on its PCIe group's shared channels. Each R goes
// before the first op that would end after its planned start (so it is requested at the end of the
// op before, no later than planned), and before its B.
//
// The template is only an order: the simulator decides the real timing (every op as early as
// the lists, inputs, memory and channels allow), which may deadlock or differ; periodic.h tries
// many cycles and keeps the best simulated one.
//
// Complexity: O(S·m·K·K log K) for the memory plan (K: microbatches resident at once on a
// device, at most its stages times m), O(S·k²) for the offsets (k stages on a device) and
// O(N log N) to sort the N ops into lists.
#pragma once

#include <optional>
#include <vector>

#include "model/instance.h"
#include "model/schedule.h"

namespace optpipe {

// Offsets of one stage's ops in the template (ms, microbatch 0; microbatch j adds c·j).
struct StageOffsets {
  double f = 0, b = 0, w = 0;
};

// The offsets for cycle c; empty when c is below some device's work per microbatch (the sum of
// F + B + W over its stages: nothing fits in a cycle), or, on a device with several stages, when
// an op finds no free residue long enough.
// chains_only: each B at its chain's time and its W right after it, residues ignored (the
// simulator then settles the collisions by the lists' order; the gaps stay the latency).
// stagger: two neighbouring offloadable stages on devices of one PCIe group take turns on its
// channels: the later stage's forward waits until its offload would start where the earlier
// stage's ends (F(s) + F_s >= F(s-1) + F_{s-1} + offload_{s-1}), and the earlier stage's backward
// waits until its reload, ending at that B, would start where the later stage's ends (B(s-1) >=
// B(s) + reload_{s-1}). Where (nearly) every microbatch of both stages is offloaded, each
// transfer then finds its channel free instead of queueing behind the neighbour's while its
// activation waits in memory (bench/README.md, "The solver at scale").
// w_after_b: each W right after its B. Where it does not fit between the B and the next forward,
// the B moves past that forward (later B's, a longer round trip) instead of the W going after the
// forward: the W's activation is then not held across the forward, which at 2 activations is
// what stops the memory plan from fitting at short cycles (on bench-gpt3-28.3b-32x128-2act no
// plan fits below 19.5 ms without it; bench/README.md). On a device with several stages the B
// and its W take the first free residue long enough for both.
std::vector<StageOffsets> periodic_offsets(const Instance& instance, double c, bool chains_only = false,
                                           bool stagger = false, bool w_after_b = false);

struct PeriodicPlanOptions {
  double cycle = 0;              // c, ms
  double offload_margin = 0;     // ms added to each planned offload's end (channel waits)
  double reload_margin = 0;      // ms by which each planned reload starts earlier than needed
  bool book_channels = true;     // plan the transfers on their PCIe group's shared channels
  double spread = 0;             // > 0 (without booking): offload the steady state's share evenly first
  bool chains_only = false;      // periodic_offsets' chains_only
  bool stagger = false;          // periodic_offsets' stagger
  bool w_after_b = false;        // periodic_offsets' w_after_b
};

// The template's lists with the memory plan behind them: per (stage, microbatch) sj = s·m + j,
// the planned end of an offload (its margin included) and start of its reload; NaN where the
// microbatch is not offloaded.
struct PeriodicPlan {
  Schedule schedule;
  std::vector<StageOffsets> offsets;
  std::vector<double> offload_end, reload_start;
};
std::optional<PeriodicPlan> periodic_plan(const Instance& instance, const PeriodicPlanOptions& options);

// The lists of the template for these options (with the offloads the memory plan chose), or
// nullopt when no cycle offsets exist or the memory plan fails.
std::optional<Schedule> periodic_schedule(const Instance& instance, const PeriodicPlanOptions& options);

// Whether some device holds several stages (V, loop; the template then fits them into one cycle).
bool several_stages_on_a_device(const Instance& instance);

// Whether residues x and y of intervals [x, x + lx) and [y, y + ly) overlap modulo c (exposed for
// the tests).
bool overlaps_modulo(double x, double lx, double y, double ly, double c);

}  // namespace optpipe
