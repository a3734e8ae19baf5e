// The problem instance of spec §1–§2 (../shared/spec/problem.md): devices, stages, microbatches.
//
// Plain data plus a few derived quantities that every component needs the same way (effective
// comm between two stages, op durations with an unsplit backward, memory freed by B and W).
// Reading and writing the JSON file form lives in instance_io.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace optpipe {

enum class OpType : std::uint8_t { F = 0, B = 1, W = 2, R = 3 };

struct Device {
  double memory_limit = 0;   // bytes
  double static_memory = 0;  // bytes: weights, grads, optimizer state, workspace
  int pcie_group = 0;        // devices with the same group share one D2H and one H2D channel
};

struct Stage {
  int device = 0;
  double forward = 0, backward = 0, weight = 0;   // ms
  double activation = 0;                          // bytes F allocates, held for B (M_B)
  double weight_activation = 0;                   // bytes still held after B until W ends (M_W)
  std::optional<double> offload, reload;          // ms for the whole activation; absent: not offloadable

  bool offloadable() const { return offload.has_value() && reload.has_value(); }
};

// How stages are laid out on devices; the classic schedules need one of the first three.
enum class Placement { kOnePerDevice, kV, kLoop, kOther };

struct Instance {
  std::string name;
  int microbatches = 1;
  bool split_backward = true;
  std::vector<double> offload_levels{0.0, 1.0};  // sorted ascending, always contains 0
  std::vector<double> comm;                      // S-1 entries: comm between stage s and s+1 as given
  std::vector<Device> devices;
  std::vector<Stage> stages;

  int num_devices() const { return static_cast<int>(devices.size()); }
  int num_stages() const { return static_cast<int>(stages.size()); }

  // Comm between stage s and s+1: the given value when they sit on different devices, else 0.
  double comm_after(int s) const {
    return stages[s].device == stages[s + 1].device ? 0.0 : comm[s];
  }
  // Duration of a compute op of stage s (an unsplit B lasts backward + weight). R: 0.
  double duration(OpType type, int s) const;
  // Bytes freed at the end of B (activation - weight_activation; unsplit: activation).
  double freed_by_b(int s) const {
    return split_backward ? stages[s].activation - stages[s].weight_activation : stages[s].activation;
  }
  // Bytes freed at the end of W (weight_activation; unsplit: there is no W).
  double freed_by_w(int s) const { return split_backward ? stages[s].weight_activation : 0.0; }
  // Compute op types this instance has: F, B and, when split, W.
  int num_compute_types() const { return split_backward ? 3 : 2; }
  // Compute ops in all (F, B and W of every stage and microbatch): the size the solver's
  // thresholds are stated in.
  int num_compute_ops() const { return num_compute_types() * num_stages() * microbatches; }

  // Stages of each device in increasing stage order.
  std::vector<std::vector<int>> stages_by_device() const;
  Placement placement() const;
  bool is_offload_level(double r) const;
  // True when some stage can offload and some offload level is above 0.
  bool can_offload() const;
  // Compute time of device d per microbatch: its stages' F, B and W durations.
  double work_per_microbatch(int d) const;
  // Total compute time of device d: its F, B and W durations over all microbatches.
  double busy_time(int d) const { return work_per_microbatch(d) * microbatches; }
};

const char* to_string(Placement p);

}  // namespace optpipe
