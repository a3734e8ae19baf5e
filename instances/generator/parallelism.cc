#include "instances/generator/parallelism.h"

#include <algorithm>
#include <string>

#include "model/error.h"

namespace optpipe::gen {

double allreduce_ms(double bytes, int ranks, double bandwidth, double latency_ms) {
  if (ranks <= 1) return 0.0;
  return latency_ms + 2.0 * (ranks - 1) / ranks * bytes / bandwidth * 1e3;
}

double gather_ms(double bytes, int ranks, double bandwidth, double latency_ms) {
  if (ranks <= 1) return 0.0;
  return latency_ms + double(ranks - 1) / ranks * bytes / bandwidth * 1e3;
}

double tp_allreduce_ms(const ModelShape& m, const CostOptions& o, const GpuPreset& gpu) {
  return allreduce_ms(p2p_bytes(m), o.tensor_parallel, gpu.nvlink_bandwidth, gpu.nvlink_latency_ms);
}

int pcie_sharers(const CostOptions& o, const GpuPreset& gpu) {
  return std::max(1, std::min(o.tensor_parallel, gpu.gpus_per_pcie_switch));
}

int pcie_group_of(int device, const CostOptions& o, const GpuPreset& gpu) {
  return device / std::max(1, gpu.gpus_per_pcie_switch / std::max(1, o.tensor_parallel));
}

int node_of_device(int device, const CostOptions& o, const GpuPreset& gpu) {
  return device * std::max(1, o.tensor_parallel) / std::max(1, gpu.gpus_per_node);
}

DpSync dp_sync(double params, int pipeline_devices, const ModelShape& m, const CostOptions& o, const GpuPreset& gpu) {
  DpSync sync;
  const int d = o.data_parallel;
  if (d <= 1) return sync;
  sync.nvlink = static_cast<long long>(o.tensor_parallel) * pipeline_devices * d <= gpu.gpus_per_node;
  const double bw = sync.nvlink ? gpu.nvlink_bandwidth : gpu.network_bandwidth;
  const double lat = sync.nvlink ? gpu.nvlink_latency_ms : gpu.network_latency_ms;
  const double grads = 4.0 * params;  // fp32 main gradients
  if (o.zero_stage >= 1) {
    const double weights = dtype_bytes(m.dtype) * params;
    sync.bytes = grads + weights;
    sync.ms = gather_ms(grads, d, bw, lat) + gather_ms(weights, d, bw, lat);
  } else {
    sync.bytes = grads;
    sync.ms = allreduce_ms(grads, d, bw, lat);
  }
  return sync;
}

void validate_parallelism(const ModelShape& m, const CostOptions& o, const GpuPreset& gpu) {
  const int t = o.tensor_parallel;
  if (t < 1) throw InputError("tensor_parallel: must be a positive integer, got " + std::to_string(t));
  if (gpu.gpus_per_node % t != 0) {
    throw InputError("tensor_parallel: " + std::to_string(t) + " does not divide the " +
                     std::to_string(gpu.gpus_per_node) + " GPUs of a node (tensor parallelism stays within a node)");
  }
  if (m.heads % t != 0) {
    throw InputError("tensor_parallel: " + std::to_string(t) + " does not divide the " + std::to_string(m.heads) +
                     " attention heads");
  }
  if (m.ffn % t != 0) {
    throw InputError("tensor_parallel: " + std::to_string(t) + " does not divide the FFN size " + std::to_string(m.ffn));
  }
  if (o.data_parallel < 1) {
    throw InputError("data_parallel: must be a positive integer, got " + std::to_string(o.data_parallel));
  }
  if (o.zero_stage != 0 && o.zero_stage != 1) {
    throw InputError("zero: stage " + std::to_string(o.zero_stage) +
                     " is not modelled (0: no sharding, 1: optimizer state sharded over the data-parallel replicas)");
  }
}

}  // namespace optpipe::gen
