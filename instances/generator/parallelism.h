// Tensor- and data-parallel costs for the generator (issue 22, part 3: `optpipe plan`): the
// collectives' times, where a pipeline device's GPUs sit (NVLink node, PCIe switch), ZeRO's
// sharded static memory and the data-parallel gradient synchronisation. The per-layer FLOP and
// activation splits of tensor parallelism are in cost_model.h.
//
// GPU numbering: a pipeline device is t GPUs (tensor parallel, consecutive, within one node of
// gpus_per_node); the p devices of one pipeline replica follow each other (GPU = d·t + tp rank);
// the d replicas follow each other (data parallel, outermost). So a pipeline stays within a node
// while t·p <= gpus_per_node, and the data-parallel peers of a GPU are t·p GPUs apart.
//
// Collectives, alpha-beta model (Thakur, Rabenseifner and Gropp, "Optimization of Collective
// Communication Operations in MPICH", IJHPCA 2005; NCCL's ring algorithm): an all-reduce of n
// bytes over k GPUs takes latency + 2(k-1)/k · n / bandwidth, a reduce-scatter or an all-gather
// latency + (k-1)/k · n / bandwidth. Bandwidth and latency: the preset's NVLink within a node,
// its InfiniBand (one NIC per GPU) across nodes; one latency per collective.
//
// Tensor parallel (Narayanan et al., arXiv 2104.04473 §3.2, Fig. 5): per layer two all-reduces
// of s·b·h activation values in F (after attention and after the MLP) and two in B, over NVLink.
//
// PCIe: a device's t GPUs offload their parts at the same time. With g GPUs per PCIe switch,
// min(t, g) of them share each switch's link, so a device's transfer takes min(t, g) times as
// long as one GPU's alone; for t < g, g/t devices share a switch (pcie_group = d / (g/t)),
// otherwise each device has its own switches (pcie_group = d). t = 1: the generator's rule.
//
// ZeRO (Rajbhandari et al., arXiv 1910.02054 §5.1): stage 1 (P_os) shards the optimizer state
// over the d replicas: of the 18 bytes per parameter of bf16 training (2 weights + 4 fp32
// gradients + 12 optimizer: fp32 master weights and two Adam moments) 6 + 12/d stay on a GPU, as
// in Megatron-LM's distributed optimizer ("6 + 12/d"); fp32 training 8 + 8/d; a custom
// bytes_per_param B keeps min(B, 6 or 8) whole and divides the rest. Stages 2 and 3 (gradients,
// parameters) are not modelled: with pipeline parallelism each microbatch's backward would
// reduce-scatter gradients (DeepSpeed allows only stage 1 with its pipeline engine).
//
// Data-parallel gradient synchronisation, once per iteration, outside the pipeline schedule:
// ZeRO-0 all-reduces each GPU's fp32 gradients (4 bytes per parameter); ZeRO-1 reduce-scatters
// them and all-gathers the updated weights (dtype bytes). Within a node when all t·p·d GPUs are
// in one, else over InfiniBand. `optpipe plan` starts each device's synchronisation when that
// device's last op ends and takes the iteration to end when the last one does (README.md,
// "Planning a run").
// Every function is O(1).
#pragma once

#include "instances/generator/cost_model.h"
#include "instances/generator/gpu_preset.h"
#include "instances/generator/model_shape.h"

namespace optpipe::gen {

// Ring all-reduce of `bytes` over `ranks` GPUs, ms; 0 for ranks <= 1.
double allreduce_ms(double bytes, int ranks, double bandwidth, double latency_ms);
// Reduce-scatter or all-gather of `bytes` (the whole buffer) over `ranks` GPUs, ms; 0 for ranks <= 1.
double gather_ms(double bytes, int ranks, double bandwidth, double latency_ms);

// One all-reduce of an s·b·h activation across a device's t GPUs over NVLink; 0 for t = 1.
double tp_allreduce_ms(const ModelShape& model, const CostOptions& options, const GpuPreset& gpu);

// GPUs of one device that share each PCIe link: min(t, gpus_per_pcie_switch), at least 1.
int pcie_sharers(const CostOptions& options, const GpuPreset& gpu);
// The pcie_group of pipeline device d (see above).
int pcie_group_of(int device, const CostOptions& options, const GpuPreset& gpu);
// The node of pipeline device d's GPUs (replica 0).
int node_of_device(int device, const CostOptions& options, const GpuPreset& gpu);

struct DpSync {
  double ms = 0;          // one GPU's gradient synchronisation per iteration (0 for d = 1)
  double bytes = 0;       // what it moves through the collectives (buffer sizes)
  bool nvlink = true;     // false: across nodes, over InfiniBand
};
// The synchronisation of a GPU holding `params` parameters, in a job of `pipeline_devices`
// devices per replica (see above).
DpSync dp_sync(double params, int pipeline_devices, const ModelShape& model, const CostOptions& options,
               const GpuPreset& gpu);

// Throws InputError naming the field: t < 1, t not dividing the GPUs per node, the heads or the
// FFN size; d < 1; a ZeRO stage other than 0 or 1.
void validate_parallelism(const ModelShape& model, const CostOptions& options, const GpuPreset& gpu);

}  // namespace optpipe::gen
