// Where the branch-and-bound computes its node bounds (kernels/batched_bounds.h). kCpu: one node
// at a time in the depth-first dives (the default; fastest without a GPU for now). The batch
// modes expand many open nodes at once and bound all their children in one batch (each worker
// runs a set of depth-first dives in lockstep, refilled best-first from the pool:
// batch_worker.h): kTbb on the CPU, kGpu on a CUDA device (an error without one), kAuto the GPU
// when one is present, otherwise kTbb.
#pragma once

#include <optional>
#include <string_view>

namespace optpipe {

enum class BoundsMode { kCpu, kTbb, kGpu, kAuto };

// "cpu", "tbb", "cuda" (kGpu: the backend's name) or "auto".
inline const char* to_string(BoundsMode mode) {
  switch (mode) {
    case BoundsMode::kCpu: return "cpu";
    case BoundsMode::kTbb: return "tbb";
    case BoundsMode::kGpu: return "cuda";
    case BoundsMode::kAuto: return "auto";
  }
  return "?";
}

// The mode a command line names: cpu, tbb, gpu or auto; nullopt for anything else.
inline std::optional<BoundsMode> parse_bounds_mode(std::string_view name) {
  if (name == "cpu") return BoundsMode::kCpu;
  if (name == "tbb") return BoundsMode::kTbb;
  if (name == "gpu") return BoundsMode::kGpu;
  if (name == "auto") return BoundsMode::kAuto;
  return std::nullopt;
}

}  // namespace optpipe
