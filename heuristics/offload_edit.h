// Editing the offload decisions of a schedule: set F(s,j)'s level and place R(s,j) in the
// device's list, keeping every rule of spec §3 (R after F, before B, FIFO per stage).
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "model/instance.h"
#include "model/schedule.h"
#include "model/simulator.h"

namespace optpipe {

// Index of action (type, s, j) in `list`, or -1.
int find_action(const std::vector<Action>& list, OpType type, int s, int j);

// The insertion positions R(s,j) may take in device d's list (insert before that index): after
// F(s,j) and after the previous R of stage s, up to B(s,j) and the next R of stage s. Assumes
// R(s,j) is not in the list. Returns {lo, hi}, inclusive.
std::pair<int, int> reload_range(const Schedule& schedule, int d, int s, int j);

// The latest position in reload_range whose request time (the end of the compute action before
// it, from `timeline` of a simulation of this same list) leaves `reload_ms` before `deadline`;
// the earliest position of the range when none does.
int latest_hidden_position(const Schedule& schedule, const std::vector<ActionTiming>& timeline, int d, int s,
                           int j, double reload_ms, double deadline);

// Sets F(s,j) on device d to offload fraction r (r > 0) and inserts R(s,j) at `position`
// (clamped into reload_range); when r == 0, removes the offload and its R.
void set_offload(Schedule& schedule, int d, int s, int j, double r, int position);

// The offload fraction F(s,j) carries in `schedule` (0 when absent).
double offload_level(const Schedule& schedule, int d, int s, int j);

}  // namespace optpipe
