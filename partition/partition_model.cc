#include "partition/partition_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "instances/generator/cost_model.h"
#include "model/bytes.h"
#include "model/error.h"
#include "partition/reference_splits.h"

namespace optpipe::partition {
namespace {

constexpr double kMiB = 1048576.0;
double ceil_mib(double bytes) { return std::ceil(bytes / kMiB) * kMiB; }

int device_for(Placement p, int s, int devices) {
  switch (p) {
    case Placement::kV: return s < devices ? s : 2 * devices - 1 - s;
    case Placement::kLoop: return s % devices;
    default: return s;
  }
}

const char* placement_words(Placement p) {
  switch (p) {
    case Placement::kV: return "two stages per device, V";
    case Placement::kLoop: return "two stages per device, loop";
    default: return "one stage per device";
  }
}

}  // namespace

int PartitionModel::min_layers(int stage) const {
  if (stage == 0 && profile_.first) return 0;
  if (stage == stages() - 1 && profile_.last) return 0;
  return 1;
}

std::string PartitionModel::description() const {
  std::string name = generator_ ? generator_->model.name : profile_.name;
  if (name.empty()) name = "profile";
  return name + ": " + std::to_string(layers()) + " layers on " + std::to_string(stages()) + " stages, " +
         std::to_string(devices_) + " devices (" + placement_words(placement_) + "), " + std::to_string(microbatches_) +
         " microbatches, memory limit " + format_bytes(limit_) + (limit_note_.empty() ? "" : " (" + limit_note_ + ")");
}

LayerCost PartitionModel::stage_costs(int stage, int begin, int count) const {
  return profile_.stage_costs(begin, count, stage == 0, stage == stages() - 1);
}

double PartitionModel::device_static(const std::vector<LayerCost>& on_device) const {
  double sum = profile_.workspace, transient = 0;
  for (const LayerCost& c : on_device) {
    sum += c.static_bytes;
    transient = std::max(transient, c.transient);
  }
  return sum + transient;
}

void PartitionModel::check_split(const std::vector<int>& split) const {
  if (static_cast<int>(split.size()) != stages()) {
    throw InputError("split: " + std::to_string(split.size()) + " entries for " + std::to_string(stages()) +
                     " stages (give one layer count per stage)");
  }
  long long sum = 0;
  for (int s = 0; s < stages(); ++s) {
    if (split[s] < min_layers(s)) {
      throw InputError("split: stage " + std::to_string(s) + " gets " + std::to_string(split[s]) +
                       " layers; it needs at least " + std::to_string(min_layers(s)));
    }
    sum += split[s];
  }
  if (sum != layers()) {
    throw InputError("split: the layer counts add up to " + std::to_string(sum) + ", but the model has " +
                     std::to_string(layers()) + " layers");
  }
}

Instance PartitionModel::instance(const std::vector<int>& split) const {
  check_split(split);
  return build(split);
}

Instance PartitionModel::build(const std::vector<int>& split) const {
  if (!generator_) return build_from_profile(split);
  gen::GenerateOptions o = *generator_;
  o.split = split;
  return gen::generate(o).instance;
}

Instance PartitionModel::build_from_profile(const std::vector<int>& split) const {
  const ProfileCluster& c = cluster_;
  Instance inst;
  inst.name = c.name.empty() ? (profile_.name.empty() ? "profile" : profile_.name) + "-" + std::to_string(devices_) +
                                   "x" + std::to_string(microbatches_)
                             : c.name;
  inst.microbatches = microbatches_;
  inst.split_backward = split_backward_;
  inst.offload_levels = c.offload_levels;
  inst.comm.assign(std::max(0, stages() - 1), profile_.comm);
  std::vector<std::vector<LayerCost>> on_device(devices_);
  for (int s = 0, begin = 0; s < stages(); begin += split[s], ++s) {
    const LayerCost lc = stage_costs(s, begin, split[s]);
    on_device[device_of(s)].push_back(lc);
    Stage st;
    st.device = device_of(s);
    st.forward = lc.forward;
    st.backward = split_backward_ ? lc.backward : lc.backward + lc.weight;
    st.weight = split_backward_ ? lc.weight : 0.0;
    st.activation = lc.activation;
    st.weight_activation = split_backward_ ? std::min(lc.weight_activation, lc.activation) : 0.0;
    const double t = gen::transfer_ms(lc.activation, c.gpu.pcie_bandwidth, c.gpu.pcie_latency_ms);
    st.offload = t;
    st.reload = t;
    inst.stages.push_back(st);
  }
  inst.devices.resize(devices_);
  for (int d = 0; d < devices_; ++d) {
    inst.devices[d].static_memory = device_static(on_device[d]);
    inst.devices[d].memory_limit = limit_;
    inst.devices[d].pcie_group = d / std::max(1, c.gpu.gpus_per_pcie_switch);
  }
  return inst;
}

// The limit on the default split (uniform when there is none), then fixed for every split.
void PartitionModel::resolve(const gen::MemoryLimit& memory, double gpu_memory) {
  const std::vector<int> ref = default_split_ ? *default_split_ : uniform_split(layers(), stages());
  check_split(ref);
  limit_ = std::numeric_limits<double>::max();
  if (generator_) {
    gen::GenerateOptions o = *generator_;
    o.split = ref;
    o.memory = memory;
    const Instance inst = gen::generate(o).instance;
    limit_ = inst.devices.front().memory_limit;
  } else {
    const Instance inst = build_from_profile(ref);
    double limit = memory.kind == gen::MemoryLimit::Kind::kGpu ? gpu_memory : memory.value;
    if (memory.kind == gen::MemoryLimit::Kind::kActivations) {
      limit = 0;
      for (int d = 0; d < devices_; ++d) {
        double largest = 0;
        for (const Stage& st : inst.stages) {
          if (st.device == d) largest = std::max(largest, st.activation);
        }
        limit = std::max(limit, inst.devices[d].static_memory + memory.value * largest);
      }
    }
    limit_ = ceil_mib(limit);
  }
  if (memory.kind == gen::MemoryLimit::Kind::kActivations) {
    char k[32];
    std::snprintf(k, sizeof k, "%g", memory.value);
    limit_note_ = std::string(k) + "act on the " + (default_split_ ? "default" : "uniform") + " split " +
                  split_text(ref) + ", held fixed for every split";
  }
}

void PartitionModel::init_cluster(int devices, int microbatches, Placement placement, bool split_backward,
                                  const std::vector<double>& levels) {
  if (devices <= 0) throw InputError("devices: must be a positive integer, got " + std::to_string(devices));
  if (microbatches <= 0) {
    throw InputError("microbatches: must be a positive integer, got " + std::to_string(microbatches));
  }
  if (placement == Placement::kOther) throw InputError("placement: choose one, v or loop");
  devices_ = devices;
  microbatches_ = microbatches;
  placement_ = placement;
  split_backward_ = split_backward;
  const int S = placement == Placement::kOnePerDevice ? devices : 2 * devices;
  device_of_.resize(S);
  for (int s = 0; s < S; ++s) device_of_[s] = device_for(placement, s, devices);
  max_offload_ = levels.empty() ? 0.0 : *std::max_element(levels.begin(), levels.end());
  int needed = 0;
  for (int s = 0; s < S; ++s) needed += min_layers(s);
  if (layers() < needed) {
    throw TooFewLayers("model.layers: " + std::to_string(layers()) + " layers cannot fill " + std::to_string(S) +
                       " stages: every stage needs a layer of its own (only the first and the last may hold just "
                       "the embedding or the output layer)");
  }
  default_split_ = generator_default_split(layers(), S);
  if (default_split_) {
    for (int s = 0; s < S; ++s) {
      if ((*default_split_)[s] < min_layers(s)) default_split_.reset();
      if (!default_split_) break;
    }
  }
}

void PartitionModel::init_comm() {
  const Instance ref = build(default_split_ ? *default_split_ : uniform_split(layers(), stages()));
  comm_after_.assign(stages(), 0.0);
  for (int s = 0; s + 1 < stages(); ++s) comm_after_[s] = ref.comm_after(s);
}

PartitionModel PartitionModel::from_generator(gen::GenerateOptions o) {
  PartitionModel m;
  m.profile_ = profile_from_generator(o);
  m.init_cluster(o.devices, o.microbatches, o.placement, o.split_backward, o.offload_levels);
  o.split.clear();
  m.generator_ = o;
  m.resolve(o.memory, o.gpu.memory_bytes);
  m.generator_->memory = gen::MemoryLimit{gen::MemoryLimit::Kind::kBytes, m.limit_};
  m.init_comm();
  return m;
}

PartitionModel PartitionModel::from_profile(LayerProfile profile, ProfileCluster cluster) {
  PartitionModel m;
  m.profile_ = std::move(profile);
  if (m.profile_.prefix.size() != m.profile_.layers.size() + 1) m.profile_.finish();
  if (m.profile_.layers.empty()) throw InputError("layers: the profile lists no layer");
  cluster.offload_levels = gen::normalize_offload_levels(cluster.offload_levels);
  if (cluster.memory.kind != gen::MemoryLimit::Kind::kGpu && !(cluster.memory.value > 0)) {
    throw InputError("memory_limit: must be > 0");
  }
  m.cluster_ = cluster;
  m.init_cluster(cluster.devices, cluster.microbatches, cluster.placement, cluster.split_backward,
                 cluster.offload_levels);
  m.resolve(cluster.memory, cluster.gpu.memory_bytes);
  m.init_comm();
  return m;
}

}  // namespace optpipe::partition
