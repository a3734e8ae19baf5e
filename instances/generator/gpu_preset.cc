#include "instances/generator/gpu_preset.h"

namespace optpipe::gen {

const std::vector<GpuPreset>& gpu_presets() {
  static const std::vector<GpuPreset> presets = [] {
    std::vector<GpuPreset> v;
    GpuPreset h100;
    h100.name = "h100-sxm";
    h100.description = "NVIDIA H100 SXM5 80GB in an 8-GPU HGX node (NVLink 4, PCIe Gen5, NDR InfiniBand)";
    h100.peak_flops = 989.4e12;
    h100.peak_flops_fp32 = 494.7e12;
    h100.utilization = 0.5;
    h100.memory_bytes = 81559.0 * 1048576.0;
    h100.pcie_bandwidth = 50e9;
    h100.pcie_latency_ms = 0.01;
    h100.gpus_per_pcie_switch = 2;
    h100.gpus_per_node = 8;
    h100.nvlink_bandwidth = 360e9;
    h100.nvlink_latency_ms = 0.01;
    h100.network_bandwidth = 45e9;
    h100.network_latency_ms = 0.02;
    v.push_back(h100);

    GpuPreset a100;
    a100.name = "a100-sxm";
    a100.description = "NVIDIA A100 SXM4 80GB in an 8-GPU HGX node (NVLink 3, PCIe Gen4, HDR InfiniBand)";
    a100.peak_flops = 312e12;
    a100.peak_flops_fp32 = 156e12;
    a100.utilization = 0.5;
    a100.memory_bytes = 81920.0 * 1048576.0;
    a100.pcie_bandwidth = 25e9;
    a100.pcie_latency_ms = 0.01;
    a100.gpus_per_pcie_switch = 2;
    a100.gpus_per_node = 8;
    a100.nvlink_bandwidth = 240e9;
    a100.nvlink_latency_ms = 0.01;
    a100.network_bandwidth = 22e9;
    a100.network_latency_ms = 0.02;
    v.push_back(a100);
    return v;
  }();
  return presets;
}

const GpuPreset* find_gpu_preset(const std::string& name) {
  for (const auto& g : gpu_presets()) {
    if (g.name == name) return &g;
  }
  return nullptr;
}

std::string gpu_preset_names() {
  std::string out;
  for (const auto& g : gpu_presets()) out += (out.empty() ? "" : ", ") + g.name;
  return out;
}

}  // namespace optpipe::gen
