// `optpipe profile` (issue 7): measures a stage model's costs and writes them as an instance
// (spec §5) ready for `optpipe solve`. Per stage: F, B and W times (the median of the timed
// runs after warm-up runs), the bytes F keeps for B (activation) and B keeps for W
// (weight_activation), the time to copy the kept activation to host memory and back (offload
// and reload: the CPU backend's "PCIe" is a memcpy between buffers), and the time to pass one
// activation to the next stage (comm, through the threads transport). The layout (devices,
// placement, microbatches, memory limits, offload levels) comes from a template instance.
#pragma once

#include <string>

#include "model/instance.h"
#include "runtime/mlp_model.h"

namespace optpipe::runtime {

struct ProfileOptions {
  int warmup = 3;   // runs of each op before timing
  int repeats = 9;  // timed runs of each op (the median is kept)
};

// `layout`: its devices, placement, microbatches, split, levels and limits are kept; every
// stage's costs are replaced by the measured ones, and every stage becomes offloadable. The
// result is named layout.name + "-measured".
Instance profile_mlp(const Instance& layout, const MlpConfig& model, const ProfileOptions& options);

}  // namespace optpipe::runtime
