#include "instances/generator/generate_request.h"

#include "model/bytes.h"
#include "model/error.h"

namespace optpipe::gen {

Mlp parse_mlp(const std::string& text) {
  if (text == "gelu") return Mlp::kGelu;
  if (text == "swiglu") return Mlp::kSwiGlu;
  throw InputError("model.mlp: unknown MLP \"" + text + "\" (choose gelu or swiglu)");
}

GenerateOptions resolve(const GenerateRequest& r) {
  GenerateOptions o;
  if (!r.model.empty()) {
    const ModelPreset* p = find_model_preset(r.model);
    if (!p) throw InputError("model: unknown preset \"" + r.model + "\" (choose one of: " + model_preset_names() + ")");
    o.model = p->shape;
  } else {
    const std::pair<const char*, const std::optional<int>*> needed[] = {
        {"layers", &r.layers}, {"hidden", &r.hidden}, {"heads", &r.heads}, {"vocab", &r.vocab}, {"seq", &r.seq}};
    for (const auto& [field, value] : needed) {
      if (!value->has_value()) {
        throw InputError(std::string("model: give a preset or an explicit shape (") + field +
                         " is missing; layers, hidden, heads, vocab and seq are needed)");
      }
    }
    o.model.micro_batch = 1;
  }
  if (r.layers) o.model.layers = *r.layers;
  if (r.hidden) o.model.hidden = *r.hidden;
  if (r.heads) o.model.heads = *r.heads;
  if (r.vocab) o.model.vocab = *r.vocab;
  if (r.seq) o.model.seq = *r.seq;
  if (r.micro_batch) o.model.micro_batch = *r.micro_batch;
  if (r.mlp) {
    o.model.mlp = parse_mlp(*r.mlp);
    o.model.dropout = o.model.mlp == Mlp::kGelu;
    o.model.learned_positions = o.model.mlp == Mlp::kGelu;
  }
  if (r.ffn) {
    o.model.ffn = *r.ffn;
  } else if (r.model.empty()) {
    o.model.ffn = 4 * o.model.hidden;
  }
  if (r.dtype) o.model.dtype = parse_dtype(*r.dtype);
  if (!r.model.empty() && (r.layers || r.hidden || r.heads || r.ffn || r.vocab || r.mlp)) {
    o.model.name = r.model + "-custom";
  }

  const GpuPreset* gpu = find_gpu_preset(r.gpu);
  if (!gpu) throw InputError("gpu: unknown preset \"" + r.gpu + "\" (choose one of: " + gpu_preset_names() + ")");
  o.gpu = *gpu;
  if (r.utilization) o.gpu.utilization = *r.utilization;

  if (!r.devices) throw InputError("devices: required (the number of GPUs in the pipeline)");
  if (!r.microbatches) throw InputError("microbatches: required (microbatches per iteration)");
  o.devices = *r.devices;
  o.microbatches = *r.microbatches;
  o.placement = parse_placement(r.placement);
  o.memory = parse_memory_limit(r.memory_limit);
  o.cost.recompute = parse_recompute(r.recompute);
  o.cost.flash_attention = r.flash_attention;
  o.cost.bytes_per_param = r.bytes_per_param;
  if (!r.workspace.empty()) {
    std::string why;
    const auto b = parse_byte_flag(r.workspace, &why);
    if (!b || *b < 0) throw InputError("workspace: " + (b ? std::string("must be >= 0") : why));
    o.cost.workspace_bytes = *b;
  }
  o.offload_levels = normalize_offload_levels(r.offload_levels);
  o.split = r.split;
  o.split_backward = r.split_backward;
  o.name = r.name;
  o.cost.tensor_parallel = r.tensor_parallel;
  o.cost.sequence_parallel = r.sequence_parallel;
  o.cost.data_parallel = r.data_parallel;
  o.cost.zero_stage = r.zero_stage;
  return o;
}

}  // namespace optpipe::gen
