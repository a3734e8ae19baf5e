// Small helpers shared by the pattern heuristics that write per-device lists.
#pragma once

#include <string>
#include <vector>

#include "model/instance.h"
#include "model/schedule.h"

namespace optpipe {

// An empty schedule (one empty list per device) for `instance`.
Schedule empty_schedule(const Instance& instance);

// True when every device holds exactly one stage and stage s sits on device s (the plain
// pipeline); otherwise sets *why to a reason naming the heuristic.
bool require_one_stage_per_device(const Instance& instance, const std::string& title, std::string* why);
// True for the V placement (S = 2D, device i holds stages i and 2D-1-i).
bool require_v_placement(const Instance& instance, const std::string& title, std::string* why);
// True for a loop placement with v >= 2 stages per device (stage s on device s mod D).
bool require_loop_placement(const Instance& instance, const std::string& title, std::string* why);
// True when the backward is split into B and W.
bool require_split_backward(const Instance& instance, const std::string& title, std::string* why);

// Appends B(s,j) and, when the backward is split, W(s,j) right after it (a fused backward).
void push_backward(std::vector<Action>& list, const Instance& instance, int s, int j);

}  // namespace optpipe
