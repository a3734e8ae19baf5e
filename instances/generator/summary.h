// The short human summary `optpipe generate` prints on stderr: the model, per-stage F/B/W times,
// activations and static memory, and whether 1F1B fits.
#pragma once

#include <string>

#include "instances/generator/generate.h"

namespace optpipe::gen {

// Several lines, each ending with '\n'. O(S + D).
std::string generated_summary(const GenerateOptions& options, const Generated& generated);

// Activations 1F1B keeps on device d at its peak (one stage per device: min(D - d, m)) and
// whether static + that many activations fits every device; for two-chunk placements, false and
// an explanation. `worst` gets the first device over its limit, or -1; `why` names that device,
// or the device with the least room left.
bool one_f_one_b_fits(const Instance& instance, int* worst, std::string* why);

}  // namespace optpipe::gen
