// The classic schedules as points of the memory-time plane: 1F1B, ZB-H1, ZB-H2 and PipeOffload
// (heuristics/one_f_one_b.h, zb_handcrafted.h, pipe_offload.h), each built for the instance as
// given and simulated without memory waits: its makespan, and its peak memory over devices. The
// peak is where the schedule stops fitting: at any per-GPU limit >= peak it never waits for
// memory (the same timeline, the same makespan); below it, the device at the peak must wait (a
// slower run, or a deadlock: without offload nothing in flight frees memory for a forward that
// waits).
//
// The fixed patterns do not look at the memory limit. PipeOffload does: it keeps the fastest of
// its variants (base schedule, which activations to offload) that fits the instance's own
// limits, waits included; so its point is that variant's list, at the peak where it needs no
// wait (on gpt-8x24-tight, built for 14 GiB: 15.8 GiB, 810.72 ms; at 14 GiB it waits and takes
// 834.90 ms). When no variant fits the instance's limits, it is built with no memory limit
// (memory_limits.h: unconstrained_limit), and `detail` says so.
//
// Complexity: per schedule one build and one simulation, O(N log N) for N actions (PipeOffload
// builds and simulates up to 16 variants).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/instance.h"
#include "model/schedule.h"

namespace optpipe::frontier {

// The heuristics' names (heuristics/registry.h), in the order reports list them.
inline const std::vector<std::string> kClassicSchedules{"1f1b", "zb-h1", "zb-h2", "pipe-offload"};

struct ClassicPoint {
  std::string name, title;           // "zb-h1", "ZB-H1"
  std::optional<Schedule> schedule;  // with makespan and peak_memory set; none: it does not apply
  std::string reason;                // ... and why (e.g. a placement it does not support)
  std::string detail;                // the heuristic's choices, e.g. PipeOffload's base and offloads
  double makespan = 0;               // ms
  double peak = 0;                   // bytes: the largest peak over devices
  int peak_device = -1;              // the first device at that peak
};

std::vector<ClassicPoint> classic_points(const Instance& instance);

}  // namespace optpipe::frontier
