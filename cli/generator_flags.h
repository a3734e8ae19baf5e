// The generator's model and cluster flags (--model, --layers, ..., --devices, --memory-limit,
// --tensor-parallel, ...), one definition for every command that builds instances from a model:
// `optpipe generate`, `partition` and `plan` (instances/generator/generate_request.h combines
// them with the preset).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "instances/generator/generate_request.h"

namespace optpipe::cli {

struct GeneratorFlags {
  std::string model, dtype, mlp, gpu = "h100-sxm", placement = "one", memory = "gpu", recompute = "none";
  std::string offload_levels = "0,1", name, workspace;
  int layers = 0, hidden = 0, heads = 0, ffn = 0, vocab = 0, seq = 0, micro_batch = 0;
  int devices = 0, microbatches = 0;
  double utilization = 0, bytes_per_param = 0;
  bool no_flash = false, unsplit = false;
  int tensor_parallel = 1, data_parallel = 1, zero = 0;
  bool no_sequence_parallel = false;
};

// Registers the flags on `cmd` (the model shape ones only when `shape`; --placement auto only
// when `placement_auto`: `optpipe partition` searches every placement).
void add_generator_flags(CLI::App* cmd, GeneratorFlags& flags, bool shape, bool placement_auto = false);
// The model's flags only (--model, the shape, --dtype, --utilization, --no-flash-attention,
// --workspace, --bytes-per-param, --no-sequence-parallel), without --micro-batch and
// --recompute: for `optpipe plan`, which chooses those itself.
void add_model_flags(CLI::App* cmd, GeneratorFlags& flags);
// The request of the flags given on `cmd`'s command line (flags `cmd` does not have are left at
// their defaults). Throws InputError naming the flag's field.
gen::GenerateRequest generator_request(const GeneratorFlags& flags, const CLI::App& cmd);

}  // namespace optpipe::cli
