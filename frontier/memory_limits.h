// Per-GPU memory limits for the memory-time frontier (frontier.h): an instance with one limit on
// every device, the limit at which no schedule can wait for memory, the `A..B` range of
// `optpipe frontier --limits` and the grid of limits between its ends.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "model/instance.h"

namespace optpipe::frontier {

// `instance` with every device's memory_limit set to `limit` (bytes).
Instance with_memory_limit(const Instance& instance, double limit);

// The largest, over devices, of static memory + every activation of every microbatch of its
// stages: at this limit all of them fit at once, so no schedule ever waits for memory (the
// instance "without a memory limit", finite so that every report of it stays readable).
// O(S).
double unconstrained_limit(const Instance& instance);

// `A..B` with byte units on both ends ("20GiB..80GiB", "20 GiB .. 80 GiB"); an end left out
// ("..40GiB", "20GiB..") is nullopt: the caller's default. Throws InputError naming the end and
// why (no "..", a missing unit, not a number, 0 or less).
struct LimitRange {
  std::optional<double> low, high;
};
LimitRange parse_limit_range(std::string_view text);

// `steps` limits from `low` to `high`, evenly spaced, both ends included (steps >= 1; one limit
// when low == high or steps == 1: `low`). Ascending.
std::vector<double> limit_grid(double low, double high, int steps);

}  // namespace optpipe::frontier
