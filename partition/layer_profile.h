// The layer model that stage partitioning cuts (issue 22): a sequence of layers with their costs
// per microbatch, the blocks that always sit on the first stage (the embedding) and on the last
// (the output layer and the loss), and a stage's costs as the sum of its layers'.
//
// Two sources:
//   - the instance generator's cost model (profile_from_generator): one transformer layer as
//     instances/generator/cost_model.h computes it, repeated `layers` times, the embedding block
//     as `first` and the output block as `last`; summed here, a stage's costs are what
//     gen::stage_cost() gives for it (before the generator rounds them into the file);
//   - a profile file (parse_layer_profile, format "optpipe-layer-profile/1", documented in
//     docs/partition.md): measured F, B, W times, activation bytes and static bytes per layer.
//
// Static memory of a device: the sum of its stages' static bytes + the profile's workspace + the
// largest transient of its stages (the generator's rule: bytes alive only during a B or W, such
// as the LM head's fp32 logit gradient, share one workspace). A stage's transient is the sum of
// its layers' (full recomputation) or its first/last block's, whichever is larger.
// Cost: stage_costs O(1) after the O(L) prefix sums of LayerProfile::finish(); parsing O(L).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "instances/generator/generate.h"

namespace optpipe::partition {

inline constexpr const char* kLayerProfileFormat = "optpipe-layer-profile/1";

// One layer's (or block's) costs for one microbatch.
struct LayerCost {
  double forward = 0, backward = 0, weight = 0;  // ms (unsplit backward: backward + weight run as one B)
  double activation = 0;                         // bytes F allocates and B frees (M_B)
  double weight_activation = 0;                  // bytes still held after B until W (M_W <= M_B)
  double static_bytes = 0;                       // held for the whole run: weights, gradients, optimizer state
  double transient = 0;                          // workspace alive only during its B/W
};

struct LayerProfile {
  std::string name;
  std::vector<LayerCost> layers;      // in model order; what partitioning splits
  std::optional<LayerCost> first;     // always on the first stage (embedding)
  std::optional<LayerCost> last;      // always on the last stage (output layer, loss)
  double comm = 0;                    // ms to pass an activation between stages on different devices
  double workspace = 0;               // bytes of static memory per device beyond its stages'

  int num_layers() const { return static_cast<int>(layers.size()); }
  // Prefix sums for stage_costs(); call after changing `layers` (the readers below do).
  void finish();
  // Layers [begin, begin + count), plus `first` when is_first and `last` when is_last: sums of
  // every field, transient as described above. O(1).
  LayerCost stage_costs(int begin, int count, bool is_first, bool is_last) const;

  std::vector<LayerCost> prefix;  // prefix[i]: sums over layers [0, i); filled by finish()
};

// The generator's per-layer costs for `options` (model shape, GPU, cost options; the cluster
// fields are ignored). Throws InputError for a bad shape (validate_shape).
LayerProfile profile_from_generator(const gen::GenerateOptions& options);

// Reads a profile document. Throws InputError("layers[3].forward: must be ...") naming the field.
LayerProfile parse_layer_profile(const std::string& text);
// Reads a profile file ("-": standard input). Throws InputError("path: field: reason").
LayerProfile load_layer_profile(const std::string& path);
// The profile as a document parse_layer_profile() reads back (byte fields in bytes).
std::string layer_profile_json(const LayerProfile& profile);

}  // namespace optpipe::partition
