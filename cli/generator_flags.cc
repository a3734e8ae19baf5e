#include "cli/generator_flags.h"

#include "cli/validators.h"
#include "instances/generator/generate.h"

namespace optpipe::cli {

void add_model_flags(CLI::App* cmd, GeneratorFlags& a) {
  cmd->add_option("--model", a.model, "model preset (optpipe generate --list-presets), e.g. gpt3-14.6b, llama2-7b");
  cmd->add_option("--layers", a.layers, "transformer layers (explicit shape, or override the preset's)");
  cmd->add_option("--hidden", a.hidden, "hidden size h");
  cmd->add_option("--heads", a.heads, "attention heads (must divide --hidden)");
  cmd->add_option("--ffn", a.ffn, "FFN inner size (default 4 x hidden for an explicit shape)");
  cmd->add_option("--vocab", a.vocab, "vocabulary size");
  cmd->add_option("--seq", a.seq, "sequence length in tokens");
  cmd->add_option("--mlp", a.mlp, "gelu (GPT) or swiglu (Llama)")->check(CLI::IsMember({"gelu", "swiglu"}));
  cmd->add_option("--dtype", a.dtype, "bf16 (default), fp16 or fp32")->check(CLI::IsMember({"bf16", "fp16", "fp32"}));
  cmd->add_option("--utilization", a.utilization, "achievable fraction of the GPU's peak rate (default 0.5)");
  cmd->add_flag("--no-flash-attention", a.no_flash, "keep the s x s attention scores");
  cmd->add_option("--workspace", a.workspace, "per-GPU workspace in the static memory (default 1GiB)");
  cmd->add_option("--bytes-per-param", a.bytes_per_param,
                  "static bytes per parameter before ZeRO's sharding (default 18; fp32: 16)");
  cmd->add_flag("--no-sequence-parallel", a.no_sequence_parallel,
                "with tensor parallelism, keep the norm inputs, layer inputs and dropout masks whole on every GPU");
}

void add_generator_flags(CLI::App* cmd, GeneratorFlags& a, bool shape, bool placement_auto) {
  if (shape) {
    add_model_flags(cmd, a);
    cmd->add_option("--micro-batch", a.micro_batch, "sequences per microbatch (default: the preset's, or 1)");
    cmd->add_option("--recompute", a.recompute, "activation recomputation: none (default), selective or full")
        ->check(CLI::IsMember({"none", "selective", "full"}));
    cmd->add_option("--tensor-parallel", a.tensor_parallel,
                    "GPUs per pipeline device splitting every layer (Megatron-LM; default 1; within a node)")
        ->check(more_than(0));
    cmd->add_option("--data-parallel", a.data_parallel,
                    "pipeline replicas (default 1): only ZeRO's sharding of the static memory depends on it")
        ->check(more_than(0));
    cmd->add_option("--zero", a.zero, "ZeRO stage: 0 (default) or 1 (optimizer state sharded over the replicas)")
        ->check(CLI::IsMember({0, 1}));
  }
  cmd->add_option("--devices", a.devices, "number of GPUs in the pipeline (required)");
  if (placement_auto) {
    cmd->add_option("--placement", a.placement,
                    "one (a stage per GPU, default), v or loop (2 stages per GPU), or auto (each of them, the time "
                    "shared, the fastest kept)")
        ->check(CLI::IsMember({"one", "v", "loop", "auto"}));
  } else {
    cmd->add_option("--placement", a.placement, "one (a stage per GPU, default), v or loop (2 stages per GPU)")
        ->check(CLI::IsMember({"one", "v", "loop"}));
  }
  cmd->add_option("--microbatches", a.microbatches, "microbatches per iteration (required)");
  cmd->add_option("--gpu", a.gpu, "GPU preset: h100-sxm (default) or a100-sxm (memory, PCIe, NVLink)");
  cmd->add_option("--memory-limit", a.memory,
                  "per-GPU limit: gpu (default), a size with its unit (40GiB), or Nact (static + N of the largest "
                  "activations, on the default split, then fixed for every split)");
  cmd->add_option("--offload-levels", a.offload_levels, "allowed offload fractions (default 0,1)");
  cmd->add_flag("--unsplit-backward", a.unsplit, "fused backward (no W ops)");
  cmd->add_option("--name", a.name, "instance name (default MODEL[-v|-loop]-DxM)");
}

gen::GenerateRequest generator_request(const GeneratorFlags& a, const CLI::App& cmd) {
  gen::GenerateRequest r;
  auto given = [&](const char* flag) { return cmd.get_option_no_throw(flag) != nullptr && cmd.count(flag) > 0; };
  r.model = a.model;
  if (given("--layers")) r.layers = a.layers;
  if (given("--hidden")) r.hidden = a.hidden;
  if (given("--heads")) r.heads = a.heads;
  if (given("--ffn")) r.ffn = a.ffn;
  if (given("--vocab")) r.vocab = a.vocab;
  if (given("--seq")) r.seq = a.seq;
  if (given("--micro-batch")) r.micro_batch = a.micro_batch;
  if (given("--mlp")) r.mlp = a.mlp;
  if (given("--dtype")) r.dtype = a.dtype;
  r.gpu = a.gpu;
  if (given("--utilization")) r.utilization = a.utilization;
  if (given("--devices")) r.devices = a.devices;
  if (given("--microbatches")) r.microbatches = a.microbatches;
  r.placement = a.placement;
  r.memory_limit = a.memory;
  r.recompute = a.recompute;
  r.flash_attention = !a.no_flash;
  r.bytes_per_param = a.bytes_per_param;
  r.workspace = a.workspace;
  r.offload_levels = gen::parse_offload_levels(a.offload_levels);
  r.split_backward = !a.unsplit;
  r.name = a.name;
  r.tensor_parallel = a.tensor_parallel;
  r.sequence_parallel = !a.no_sequence_parallel;
  r.data_parallel = a.data_parallel;
  r.zero_stage = a.zero;
  return r;
}

}  // namespace optpipe::cli
