// A generator request in the terms people use (a preset name, the shape fields they want to
// change, the placement and memory limit as text), and resolve() that turns it into the
// generator's options (generate.h). The one place where a preset and explicit fields combine:
// `optpipe generate` (cli/cmd_generate.cc) and the Python package's optpipe.generate() both
// fill a request and call resolve().
//
// Rules: with a preset, each shape field given replaces the preset's, and changing the
// architecture (layers, hidden, heads, ffn, vocab or mlp) renames the model "<preset>-custom";
// without one, layers, hidden, heads, vocab and seq are required, ffn defaults to 4 x hidden and
// the micro-batch to 1. mlp "swiglu" also turns off dropout and learned positions (Llama-style),
// "gelu" turns them on (GPT-style).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "instances/generator/generate.h"

namespace optpipe::gen {

struct GenerateRequest {
  std::string model;  // preset name (model_presets()); empty: an explicit shape
  std::optional<int> layers, hidden, heads, ffn, vocab, seq, micro_batch;
  std::optional<std::string> mlp;    // "gelu" or "swiglu"
  std::optional<std::string> dtype;  // "bf16", "fp16" or "fp32"
  std::string gpu = "h100-sxm";      // gpu_presets()
  std::optional<double> utilization;
  std::optional<int> devices, microbatches;  // required
  std::string placement = "one";     // parse_placement
  std::string memory_limit = "gpu";  // parse_memory_limit
  std::string recompute = "none";    // parse_recompute
  bool flash_attention = true;
  double bytes_per_param = 0;        // 0: the dtype's default
  std::string workspace;             // bytes ("2GiB"); empty: the default 1 GiB
  std::vector<double> offload_levels{0.0, 1.0};  // 0 is added; sorted, duplicates dropped
  std::vector<int> split;            // layers per stage; empty: even (or the Zero Bubble split)
  bool split_backward = true;
  std::string name;                  // empty: "<model>[-v|-loop]-DxM"
  int tensor_parallel = 1;           // GPUs per pipeline device (parallelism.h)
  bool sequence_parallel = true;
  int data_parallel = 1;             // pipeline replicas: ZeRO's sharding only
  int zero_stage = 0;                // 0 or 1
};

// "gelu" or "swiglu". Throws InputError("model.mlp: ...").
Mlp parse_mlp(const std::string& text);

// The generator's options for `request`. Throws InputError naming the field: an unknown preset
// ("model: ..."), a missing shape field, devices or microbatches, a bad placement, memory limit,
// recompute, dtype, mlp, workspace or offload level. Values generate() checks itself (sizes,
// utilisation, the split) are passed on as given.
GenerateOptions resolve(const GenerateRequest& request);

}  // namespace optpipe::gen
