// The pipeline scheduling problem (../shared/spec/problem.md) as a MILP, in the style of the
// Zero Bubble paper's ILP (Qi et al., arXiv 2401.10241, §3) and OptPipe (arXiv 2510.05186, §2,
// as reconstructed in ../shared/background/optpipe-paper.md): continuous start times, one
// ordering binary per pair of ops on a device, big-M disjunctions, memory rows at allocations,
// offload binaries and transfer start times.
//
// Families (n_d compute ops on device d, N = sum n_d, K_d offloadable (stage, microbatch) on d,
// K_g those on PCIe group g, L positive offload levels):
//   S_<op>        start of every compute op (N), makespan C >= the end of every sink op;
//   prec_*        spec §4 ready rules with comm, and FIFO per stage and op type (O(N) rows);
//   x_<a>_<b>     = 1 when a runs before b on their device, for every pair on one device NOT
//                 ordered by the transitive closure of the fixed precedences; two big-M rows each
//                 (M = the horizon, an upper bound on the optimum, e.g. the best heuristic's);
//   tri_*         transitivity among ops of zero duration only (elsewhere the times imply it);
//   mem_F_*       at every F start: static + activations allocated - freed before <= limit
//                 (one row per F on a device whose memory can run out);
//   with offload:
//   o_<sj>_l<k>   level k of (s,j) offloaded, sum_k <= 1 (K·L binaries);
//   Toff_/Trel_   start of the D2H / H2D transfer (durations r·offload, r·reload);
//   koff_/krel_   channel order of two transfers of different stages on one PCIe group
//                 (FIFO within a stage is fixed), O(K_g^2) binaries;
//   z_/q_         "offload of sj ended by t" and the GiB it freed, for t = each F start and each
//                 reload start on the same device; u_ "reload of sj started before F y" (one
//                 binary per pair, shared by both memory rows); p_ the GiB a reload started before
//                 t took back; v_ "B/W ended by the reload start": only where the closure does not
//                 already decide it: O(K_d · n_d) binaries and rows;
//   mem_R_*       at every reload start: the same memory row.
// Complexity: O(sum_d n_d^2 + sum_g K_g^2 + sum_d K_d n_d) variables and rows (plus the
// zero-duration triangles, O(z^3) for z zero-length ops of a device).
//
// Exactness. Without offload (no offloadable stage, or offload_levels == [0]) the MILP is exact:
// every feasible schedule gives a feasible point of the same makespan (binaries from list order),
// and every feasible point, its ops sorted by start time, is a list whose simulation is no later.
// With offload it is a RELAXATION (its optimum <= the spec's optimum): a reload may start at any
// time after its offload (the spec starts it only when the list reaches R, at an op boundary, and
// only in channel order); each PCIe channel serves its transfers in any order (the spec: strictly
// FIFO by request, a waiting reload holding later ones behind it); an offload may start later than
// the spec's. Ties are exact: at equal times removals come first (z, v allow "ended at t"), and an
// F and a reload starting together need memory + both <= limit in either order, as in the spec.
// Every spec-feasible schedule maps to a feasible point of the MILP with
// the same makespan (warm_start below builds it), so the MILP's optimum is never larger.
#pragma once

#include <string>
#include <vector>

#include "model/instance.h"
#include "milp/milp_model.h"
#include "model/schedule.h"

namespace optpipe::milp {

struct FormulationStats {
  int variables = 0, binaries = 0, constraints = 0;
  int order_binaries = 0;     // x_: pairs of compute ops on one device
  int fixed_pairs = 0;        // pairs on one device ordered by the closure (no binary)
  int offload_binaries = 0;   // o_
  int channel_binaries = 0;   // koff_, krel_
  int memory_binaries = 0;    // z_, u_, a_, v_
};

struct Formulation {
  Model model;
  double horizon = 0;          // big-M: upper bound on the makespan
  bool exact = true;           // false when offload is possible (then a relaxation)
  FormulationStats stats;
  // Values of every variable for the warm-start schedule (empty when none was given).
  std::vector<double> start_values;
  double start_makespan = 0;
};

// Builds the MILP of `instance`. `horizon` must be an upper bound on the optimal makespan (the
// best heuristic's makespan; a feasible schedule's makespan); every time variable is bounded by
// it and it is the big-M of the disjunctions. With `warm_start` (a schedule that must simulate
// feasibly with makespan <= horizon + 1e-9, else InputError), also fills start_values: every
// variable's value along the simulated timeline. Memory rows are in GiB (bytes / 2^30).
Formulation build_formulation(const Instance& instance, double horizon, const Schedule* warm_start = nullptr);

// Variable name of a compute op's start, e.g. "S_F_s0_j3" (type F, B or W).
std::string start_name(OpType type, int stage, int mb);

// The comment block the writers put at the top of the file (what the model is, exactness, units).
std::vector<std::string> header_comments(const Instance& instance, const Formulation& f);

// One line: "N variables (B binaries), R constraints".
std::string summary(const Formulation& f);

// The MIP start in the format CBC's -mips reads (its solution-file format: a first line with
// the objective, then "index name value" lines); see milp/README.md.
std::string mip_start_text(const Formulation& f);

}  // namespace optpipe::milp
