// A generated instance as JSON, for `optpipe generate --format json` (docs/json.md,
// "generate"): the instance document itself and, as fields, what the text summary
// (summary.h) says: the model's shape and parameter count, the GPU and its rate, per stage its
// layers, F/B/W times, activation, static memory and offload time, the comm time and bytes,
// and whether 1F1B fits. And the presets of --list-presets. Times in ms, bytes and FLOP/s as
// numbers. O(S + D).
#pragma once

#include <nlohmann/json.hpp>

#include "instances/generator/generate.h"

namespace optpipe::gen {

// {"instance", "model", "gpu", "stages", "comm", "comm_bytes", "one_f_one_b", "warnings"}.
nlohmann::json generated_json(const GenerateOptions& options, const Generated& generated);

// {"models": [...], "gpus": [...]}: every preset with its fields.
nlohmann::json presets_json();

}  // namespace optpipe::gen
