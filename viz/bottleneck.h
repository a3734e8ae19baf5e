// Why the bubble is what it is: the device whose own work bounds the makespan. A device d cannot
// start before the first microbatch reaches its first stage (the forwards of the stages before
// it and the comm between them, spec §4), and then has busy_d ms of compute to do, so no schedule
// of the instance ends before
//
//     head_d + busy_d,   head_d = min over d's stages s of  sum_{t < s} (F_t + comm_after(t))
//
// (the device's first op is a forward, and F(s, j) starts no earlier than F(s, 0) could). The
// largest of these over the devices is a lower bound on every schedule's makespan (the
// "bottleneck bound"); the device that gives it is the bottleneck. Comparing a schedule's
// makespan with it says whether the bubble is the pipeline's fill in front of that device (the
// makespan meets the bound: no schedule is faster) or comes from the order, memory or transfers
// (the makespan is above it).
// O(S + D) for S stages and D devices.
#pragma once

#include <string>

#include "model/instance.h"
#include "model/simulator.h"

namespace optpipe {

struct BottleneckBound {
  int device = -1;
  double head = 0;   // ms before the device's first op can start
  double busy = 0;   // ms of compute on the device
  double bound() const { return head + busy; }
};

// The device with the largest head + busy (the lowest index among equals).
BottleneckBound bottleneck_bound(const Instance& instance);

// Two or three lines for a person: the bottleneck device and its stages, its work and its head,
// the bound they give, and where `sim`'s makespan stands against it; when the schedule moves
// activations, the busiest PCIe channel (model/channel_load.h), its transfers and its share of
// the makespan, called near saturation from 80% on. "" for an infeasible run.
std::string explain_bottleneck(const Instance& instance, const SimResult& sim);

}  // namespace optpipe
