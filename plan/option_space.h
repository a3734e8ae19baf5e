// The option space of `optpipe plan` (issue 22, part 3): every way to run a model on G GPUs with
// a global batch of B sequences that the planner compares. An option is
//   - tensor parallel t (GPUs that split every layer, within a node), pipeline devices p and data
//     parallel replicas d with t·p·d = G (Megatron-LM's 3D parallelism, Narayanan et al., arXiv
//     2104.04473 §2-3);
//   - the placement of the stages: one stage per device, or two (V or loop), for p >= 2;
//   - the micro-batch size b and the microbatch count m with b·m·d = B;
//   - the recomputation mode (none, selective, full; selective is left out with FlashAttention,
//     where it is the same as none: cost_model.h).
// The split of the layers into stages and the offload levels are not dimensions here: each
// option starts from its default split (option_screen.h) and the most promising get the
// partition search (plan_runner.h); offload is allowed at the request's levels ([0] for a
// runtime without offload) and the solver chooses whether to use it.
// Enumeration in that order (t, p, placement, b, recompute): O(divisors(G)^2 x placements x
// sizes x modes), each O(1).
#pragma once

#include <string>
#include <vector>

#include "instances/generator/generate.h"
#include "model/instance.h"

namespace optpipe::plan {

struct PlanRequest {
  // The model, the GPU (its utilisation), the cost options (FlashAttention, bytes per parameter,
  // workspace, sequence parallelism), the memory limit (gpu or bytes), the offload levels and
  // split_backward. Its devices, microbatches, placement, micro-batch size, recompute,
  // parallelism and split are the option's.
  gen::GenerateOptions base;
  int gpus = 0;
  int global_batch = 0;                           // sequences per iteration
  std::vector<Placement> placements{Placement::kOnePerDevice, Placement::kV, Placement::kLoop};
  std::vector<int> tensor_parallel;               // empty: every t that fits (see tensor_degrees)
  std::vector<int> pipeline_parallel;             // empty: every divisor
  std::vector<int> micro_batch_sizes{1, 2, 4, 8};
  std::vector<gen::Recompute> recompute{gen::Recompute::kNone, gen::Recompute::kSelective, gen::Recompute::kFull};
  int zero_stage = 1;                             // ZeRO-1 over the replicas (parallelism.h)
};

struct PlanOption {
  int tp = 1, pp = 1, dp = 1;
  Placement placement = Placement::kOnePerDevice;
  int micro_batch = 1, microbatches = 1;
  gen::Recompute recompute = gen::Recompute::kNone;

  int stages() const { return placement == Placement::kOnePerDevice ? pp : 2 * pp; }
  // "tp2 pp4 dp1 v".
  std::string layout() const;
  // "tp2 pp4 dp1 v, micro-batch 2 x 16, recompute full".
  std::string label() const;
};

struct OptionSpace {
  std::vector<PlanOption> options;
  std::vector<std::string> left_out;  // what was not enumerated and why, one line per reason
};

// The tensor-parallel degrees that divide the GPUs, the GPUs per node, the heads and the FFN size
// (or the request's list, each checked the same way; a bad one is an InputError).
std::vector<int> tensor_degrees(const PlanRequest& request);

// Throws InputError naming the field when the request cannot give any option (gpus or the global
// batch < 1, an empty list, a size < 1); options that do not exist for a reason (the batch does
// not divide, too few layers for the stages) are listed in left_out.
OptionSpace enumerate_options(const PlanRequest& request);

// The generator's options of `option` (split empty: the default, see option_screen.h).
gen::GenerateOptions generate_options(const PlanRequest& request, const PlanOption& option);

using gen::placement_word;  // "one", "v", "loop"

}  // namespace optpipe::plan
