// The canonical signature of an instance: the keys of the schedule cache (schedule_cache.h).
//
// Two keys, each the hex form of a 128-bit hash (two independent 64-bit FNV-1a hashes) of a
// canonical text:
//
//   * structure (part of both texts): devices D, stages S, microbatches m, split_backward, the
//     offload levels, the placement (device of each stage), the PCIe groups relabelled by first
//     appearance (so {7,7,3,3} and {0,0,1,1} are the same), and which stages can offload.
//     The instance's name is not part of the key.
//   * exact key: the structure plus every quantity at full precision (C99 hex floats, so no
//     rounding at all): per stage forward, backward, weight, activation, weight_activation,
//     offload, reload; the effective comm between consecutive stages (0 on one device, spec
//     §2); per device memory_limit and static_memory. Equal exact keys mean the same problem;
//     the store also keeps the instance text, and a lookup compares the exact canonical texts,
//     so a hash collision can never serve a wrong schedule.
//   * coarse key (near hits): the structure plus the quantities normalised and quantised:
//       - times (F, B, W, offload, reload, comm) are divided by the mean compute op duration
//         tau = sum_s (forward + backward + weight) / (S * types), types = 3 split, 2 unsplit
//         (= total compute time / number of compute ops), and rounded to a grid of 1/16 of tau
//         (6.25% of a mean op);
//       - bytes (activation, weight_activation) are divided by the memory room of their
//         stage's device, limit - static, and quantised on a logarithmic grid: the cell is
//         round(16 * log2(bytes / room)), steps of 2^(1/16), about 4.4% relative (relative, not
//         absolute, because a schedule holds up to m activations at once, so small ones matter
//         as much as large ones); 0 bytes is its own cell; a device with no room (<= 0) is
//         marked as such.
//     So scaling all times (a faster GPU) or all bytes (another dtype and GPU size together)
//     keeps the coarse key, and costs that differ by well under a grid step usually match
//     (values near a grid boundary may still fall into neighbouring cells: the coarse key is a
//     heuristic for finding candidates, never a promise; every near hit is re-simulated on the
//     new instance). Why this coarse: a value that moves by a fraction d of a cell changes cell
//     with probability about d, so re-profiled costs (a few % of noise) match only on a grid
//     wider than the noise; a false near hit costs one simulation (and a repair) and is then
//     just one more warm start, a missed one costs the warm start. The grids are powers of two
//     so that binary fractions (1/2, 1/4, 1, 2 x tau or x room) lie at cell centres.
//
// Both texts start with a version tag ("optpipe-sig/1"); changing anything here must bump it.
// Complexity: O(D + S) time and text.
#pragma once

#include <string>

#include "model/instance.h"

namespace optpipe::cache {

inline constexpr double kCoarseGrid = 1.0 / 16.0;  // times: cell width in units of tau
inline constexpr double kByteCellsPerOctave = 16.0; // bytes: cells per factor 2 of bytes / room

struct Signature {
  std::string exact_key;    // 32 hex digits
  std::string coarse_key;   // 32 hex digits
  std::string exact_text;   // the canonical texts the keys hash (for collision checks and debugging)
  std::string coarse_text;
};

Signature signature(const Instance& instance);

// 128-bit hash of `text` as 32 lower-case hex digits (two FNV-1a 64 hashes with different
// offset bases, the second over the text reversed).
std::string hash_hex(const std::string& text);

}  // namespace optpipe::cache
