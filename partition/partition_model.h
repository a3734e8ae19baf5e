// A stage-partitioning problem (issue 22): a layer profile (layer_profile.h) on a cluster
// (devices, placement, microbatches, memory limit, offload), and the spec instance of each split
// (layers per stage, contiguous, in model order).
//
// From the generator (from_generator): the instance of a split is exactly what
// `optpipe generate --split ...` writes for it (gen::generate), so `generate --partition auto`
// and `generate --split <that split>` give the same file. From a profile (from_profile): stages
// sum their layers' costs (LayerProfile::stage_costs); offload and reload move the activation
// over the GPU preset's PCIe link (as the generator does); devices behind one PCIe switch share
// a pcie_group; comm is the profile's.
//
// The memory limit is one number for every split: "gpu" (the GPU's memory), bytes, or "Nact",
// which the generator computes per instance (static + N of the largest activations, on the
// device that needs most) and which is resolved here once, on the default split (the uniform
// one when the generator has none), then held fixed.
// Costs: construction builds one instance, O(S); instance() O(S); the rest O(1).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "instances/generator/generate.h"
#include "model/error.h"
#include "model/instance.h"
#include "partition/layer_profile.h"

namespace optpipe::partition {

// The cluster around a profile (from_profile); the generator's options carry their own.
struct ProfileCluster {
  int devices = 0;
  int microbatches = 0;
  Placement placement = Placement::kOnePerDevice;
  gen::MemoryLimit memory;               // kGpu: gpu.memory_bytes
  gen::GpuPreset gpu;                    // memory, PCIe bandwidth and latency, GPUs per PCIe switch
  std::vector<double> offload_levels{0.0, 1.0};
  bool split_backward = true;
  std::string name;                      // empty: "<profile name>-DxM"
};

// The model's layers cannot fill its stages (every stage needs a layer of its own). what() ends
// with the advice to use fewer devices, for a placement the user chose; fact() is the rest, for
// where other placements are the answer (partition_placements).
class TooFewLayers : public InputError {
 public:
  explicit TooFewLayers(const std::string& fact) : InputError(fact + "; use fewer devices"), fact_(fact) {}
  const std::string& fact() const { return fact_; }

 private:
  std::string fact_;
};

class PartitionModel {
 public:
  // Throws InputError naming the field for bad options (gen::generate's checks), or TooFewLayers.
  static PartitionModel from_generator(gen::GenerateOptions options);
  static PartitionModel from_profile(LayerProfile profile, ProfileCluster cluster);

  const LayerProfile& profile() const { return profile_; }
  int layers() const { return profile_.num_layers(); }
  int stages() const { return static_cast<int>(device_of_.size()); }
  int devices() const { return devices_; }
  int microbatches() const { return microbatches_; }
  int device_of(int stage) const { return device_of_[stage]; }
  Placement placement() const { return placement_; }
  // Fewest layers stage s may hold: 0 where it holds the embedding or the output block, else 1.
  int min_layers(int stage) const;
  double memory_limit() const { return limit_; }
  // How the limit came about, e.g. "3act on the default split 5,6,6,6,6,6,6,5 = 41.0 GiB".
  const std::string& memory_limit_note() const { return limit_note_; }
  bool split_backward() const { return split_backward_; }
  // The largest fraction of a stage's activation an offload may move (0: none).
  double max_offload_level() const { return max_offload_; }
  // Comm after stage s as the instances carry it (0 between stages on one device).
  double comm_after(int stage) const { return comm_after_[stage]; }
  // The generator's default split, when it has one for these layers and stages.
  const std::optional<std::vector<int>>& default_split() const { return default_split_; }
  // "gpt3-14.6b on 16 devices (one stage per device), 48 microbatches".
  std::string description() const;

  // Stage s's costs with `count` layers from `begin` (before the instance rounds them).
  LayerCost stage_costs(int stage, int begin, int count) const;
  // Static memory of a device holding stages with these costs (before rounding).
  double device_static(const std::vector<LayerCost>& stages_on_device) const;

  // The instance of `split`. Throws InputError("split: ...") when it has the wrong length, a
  // stage below min_layers() or the wrong total.
  Instance instance(const std::vector<int>& split) const;
  void check_split(const std::vector<int>& split) const;

 private:
  Instance build(const std::vector<int>& split) const;
  Instance build_from_profile(const std::vector<int>& split) const;
  void resolve(const gen::MemoryLimit& memory, double gpu_memory);
  void init_cluster(int devices, int microbatches, Placement placement, bool split_backward,
                    const std::vector<double>& levels);
  void init_comm();

  LayerProfile profile_;
  std::optional<gen::GenerateOptions> generator_;  // set: instances come from gen::generate
  ProfileCluster cluster_;                         // from_profile's cluster
  int devices_ = 0, microbatches_ = 0;
  Placement placement_ = Placement::kOnePerDevice;
  std::vector<int> device_of_;
  std::vector<double> comm_after_;
  double limit_ = 0;
  std::string limit_note_;
  bool split_backward_ = true;
  double max_offload_ = 0;
  std::optional<std::vector<int>> default_split_;
};

}  // namespace optpipe::partition
