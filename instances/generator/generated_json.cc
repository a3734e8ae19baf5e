#include "instances/generator/generated_json.h"

#include <algorithm>
#include <string>

#include "instances/generator/summary.h"

namespace optpipe::gen {
namespace {

using nlohmann::json;

json shape_json(const ModelShape& m) {
  return {{"name", m.name},   {"parameters", total_parameters(m)}, {"layers", m.layers}, {"hidden", m.hidden},
          {"heads", m.heads}, {"ffn", m.ffn},   {"mlp", to_string(m.mlp)},  {"vocab", m.vocab},
          {"seq", m.seq},     {"micro_batch", m.micro_batch},              {"dtype", to_string(m.dtype)}};
}

json gpu_json(const GpuPreset& g) {
  return {{"name", g.name},
          {"description", g.description},
          {"peak_flops", g.peak_flops},
          {"peak_flops_fp32", g.peak_flops_fp32},
          {"utilization", g.utilization},
          {"memory", g.memory_bytes},
          {"pcie_bandwidth", g.pcie_bandwidth},
          {"gpus_per_pcie_switch", g.gpus_per_pcie_switch},
          {"gpus_per_node", g.gpus_per_node},
          {"nvlink_bandwidth", g.nvlink_bandwidth},
          {"network_bandwidth", g.network_bandwidth}};
}

json stages_json(const Generated& g) {
  const Instance& inst = g.instance;
  json stages = json::array();
  for (int s = 0; s < inst.num_stages(); ++s) {
    const Stage& st = inst.stages[s];
    stages.push_back({{"stage", s},
                      {"device", st.device},
                      {"layers", g.layers[s]},
                      {"embedding", g.stages[s].embedding},
                      {"output", g.stages[s].output},
                      {"forward", st.forward},
                      {"backward", st.backward},
                      {"weight", st.weight},
                      {"activation", st.activation},
                      {"weight_activation", st.weight_activation},
                      {"offload", st.offload ? json(*st.offload) : json(nullptr)},
                      {"reload", st.reload ? json(*st.reload) : json(nullptr)},
                      {"static_memory", inst.devices[st.device].static_memory}});
  }
  return stages;
}

}  // namespace

json generated_json(const GenerateOptions& o, const Generated& g) {
  double comm = 0;
  for (double c : g.instance.comm) comm = std::max(comm, c);
  std::string why;
  int worst = -1;
  const bool fits = one_f_one_b_fits(g.instance, &worst, &why);
  return {{"instance", json::parse(generated_instance_json(g.instance))},
          {"model", shape_json(o.model)},
          {"gpu", gpu_json(o.gpu)},
          {"recompute", to_string(o.cost.recompute)},
          {"flash_attention", o.cost.flash_attention},
          {"stages", stages_json(g)},
          {"comm", comm},
          {"comm_bytes", p2p_bytes(o.model)},
          {"one_f_one_b", {{"fits", fits}, {"worst_device", worst >= 0 ? json(worst) : json(nullptr)}, {"why", why}}},
          {"warnings", g.warnings}};
}

json presets_json() {
  json models = json::array(), gpus = json::array();
  for (const ModelPreset& p : model_presets()) {
    json m = shape_json(p.shape);
    m["nominal_size"] = p.params;
    m["source"] = p.source;
    models.push_back(m);
  }
  for (const GpuPreset& g : gpu_presets()) gpus.push_back(gpu_json(g));
  return {{"models", models}, {"gpus", gpus}};
}

}  // namespace optpipe::gen
