// Builds a spec instance (model/instance.h, ../shared/spec/problem.md) from a model, a GPU
// preset, a pipeline layout and a memory limit, with the cost model of cost_model.h.
//
// Layout: S = D stages (one per device) or S = 2D (V placement: stage s and 2D-1-s on device s;
// loop placement: stage s on device s mod D). Layers are split evenly; when they do not divide
// by S but layers + 2 do, the Zero Bubble paper's split is used (the embedding and the output
// layer each count as one layer: the first and last stages get one layer fewer, e.g. 22 layers
// on 8 stages as 2,3,3,3,3,3,3,2); otherwise an explicit split is required.
// Devices: d's static memory is the parameters of its stages x bytes per parameter + one
// workspace + the largest transient; pcie_group = d / gpus_per_pcie_switch. Comm between
// stages on different devices: one s·b·h activation over NVLink within a node of
// gpus_per_node devices, over InfiniBand across nodes. Every stage is offloadable: offload and
// reload move its activation over PCIe. Times are rounded to 0.1 us (5 significant digits below
// 1 ms); bytes to whole MiB (to whole KiB below 1 MiB, to whole bytes below 1 KiB), so that the
// written file reads back to exactly this instance.
// Deterministic: the same options give the same instance and the same file, byte for byte.
// Cost: O(S + D).
#pragma once

#include <string>
#include <vector>

#include "model/instance.h"
#include "instances/generator/cost_model.h"
#include "instances/generator/gpu_preset.h"
#include "instances/generator/model_shape.h"

namespace optpipe::gen {

struct MemoryLimit {
  enum class Kind {
    kGpu,          // the GPU's memory (GpuPreset::memory_bytes)
    kBytes,        // `value` bytes
    kActivations,  // static memory + `value` x the largest activation, on the device needing most
  };
  Kind kind = Kind::kGpu;
  double value = 0;
};

// "gpu", "80GiB", "7.5e10", "3act" (room for 3 of the largest activations above the static
// memory of the device that needs most). Throws InputError("memory_limit: ...").
MemoryLimit parse_memory_limit(const std::string& text);
// "0,0.5,1" -> {0, 0.5, 1}: each in [0, 1], 0 added when missing, sorted, no duplicates.
// Throws InputError("offload_levels: ...").
std::vector<double> parse_offload_levels(const std::string& text);
// Levels as the generator wants them: each in [0, 1] (else InputError("offload_levels: ...")),
// 0 added, sorted, no duplicates. parse_offload_levels() ends with it.
std::vector<double> normalize_offload_levels(std::vector<double> levels);
// "4,4,4,4" -> {4, 4, 4, 4}. Throws InputError("split: ...").
std::vector<int> parse_split(const std::string& text);
// "one", "v", "loop". Throws InputError("placement: ...").
Placement parse_placement(const std::string& text);
// parse_placement's words back: "one", "v", "loop" ("other" for a custom placement).
const char* placement_word(Placement placement);

struct GenerateOptions {
  ModelShape model;
  GpuPreset gpu;  // with its utilisation
  CostOptions cost;
  int devices = 0;
  Placement placement = Placement::kOnePerDevice;
  int microbatches = 0;
  MemoryLimit memory;
  std::vector<double> offload_levels{0.0, 1.0};
  std::vector<int> split;  // layers per stage; empty: even (or the Zero Bubble split)
  bool split_backward = true;
  std::string name;        // empty: "<model>-<D>x<m>", with "-v" or "-loop" for two-chunk layouts
};

struct Generated {
  Instance instance;
  std::vector<StageCost> stages;   // unrounded costs, one per stage
  std::vector<int> layers;         // layers per stage
  std::vector<std::string> warnings;  // e.g. a device whose static memory + one activation exceeds its limit
};

// Layers per stage (see the file comment). Throws InputError naming "split" or "model.layers".
std::vector<int> split_layers(int layers, int stages, const std::vector<int>& explicit_split);

// Throws InputError naming the field for bad input (the shape, devices, microbatches,
// utilisation, split, memory limit, offload levels).
Generated generate(const GenerateOptions& options);

// The instance file (optpipe-instance/1) in the spec's field order, byte fields as "NMiB"-style
// strings, ending with a newline. parse_instance() of it gives back `instance` exactly.
std::string generated_instance_json(const Instance& instance);

}  // namespace optpipe::gen
