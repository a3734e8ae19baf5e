// GPU and cluster presets for the instance generator: compute rate, memory, host link (PCIe)
// and which GPUs share it, and the stage-to-stage links (NVLink in a node, InfiniBand across).
//
// H100 SXM5 80GB (the default, "h100-sxm"), from the NVIDIA H100 Tensor Core GPU datasheet:
//   - bf16/fp16 dense tensor rate 989.4 TFLOP/s (the datasheet's 1,979 is with 2:4 sparsity);
//     TF32 dense 494.7 TFLOP/s (used for fp32 training).
//   - Achievable utilisation: 0.5 by default (--utilization). Times are FLOPs / (peak x
//     utilisation): 0.5 is the model-FLOPs utilisation well-tuned Megatron-style GPT training
//     reaches on H100 (about 40-55%); small hidden sizes reach less.
//   - HBM3 80 GB; nvidia-smi reports 81559 MiB (79.6 GiB), which is the "gpu" memory limit. The
//     CUDA context and library workspaces are counted in each device's static memory instead.
//   - Host link PCIe Gen5 x16: 64 GB/s per direction on paper, about 50 GB/s achievable for
//     pinned device-to-host or host-to-device copies; 10 us per transfer.
//   - On a DGX/HGX H100 two GPUs sit behind each PCIe switch (4 switches for 8 GPUs), so GPU
//     pairs (0,1), (2,3), ... share one D2H and one H2D channel: the spec's pcie_group.
//   - NVLink 4 within a node of 8 GPUs: 900 GB/s total, 450 GB/s per direction; 360 GB/s (80%)
//     achievable for a point-to-point send, 10 us latency.
//   - Across nodes, one 400 Gb/s NDR InfiniBand port per GPU (ConnectX-7): 50 GB/s, 45 GB/s
//     achievable, 20 us latency.
// A100 SXM4 80GB ("a100-sxm", for comparison with the Zero Bubble and PipeOffload papers' A100
// numbers), from the NVIDIA A100 datasheet: bf16 dense 312 TFLOP/s, TF32 156, HBM2e 80 GB (81920
// MiB), PCIe Gen4 x16 (32 GB/s per direction, 25 achievable), NVLink 3 600 GB/s total (240 GB/s
// achievable per direction), HDR InfiniBand 200 Gb/s (22 GB/s achievable); 2 GPUs per switch.
#pragma once

#include <string>
#include <vector>

namespace optpipe::gen {

struct GpuPreset {
  std::string name, description;
  double peak_flops = 0;        // FLOP/s, dense bf16/fp16 tensor rate
  double peak_flops_fp32 = 0;   // FLOP/s, dense TF32 tensor rate (fp32 training)
  double utilization = 0.5;     // achievable fraction of the peak
  double memory_bytes = 0;      // HBM capacity: the "gpu" memory limit
  double pcie_bandwidth = 0;    // bytes/s per direction, achievable
  double pcie_latency_ms = 0;   // per transfer
  int gpus_per_pcie_switch = 1; // GPUs sharing one host link (one pcie_group)
  int gpus_per_node = 8;        // NVLink domain
  double nvlink_bandwidth = 0;  // bytes/s per direction, achievable
  double nvlink_latency_ms = 0;
  double network_bandwidth = 0; // bytes/s per GPU across nodes (InfiniBand), achievable
  double network_latency_ms = 0;
};

const std::vector<GpuPreset>& gpu_presets();
// nullptr when there is no preset of that name.
const GpuPreset* find_gpu_preset(const std::string& name);
std::string gpu_preset_names();

}  // namespace optpipe::gen
