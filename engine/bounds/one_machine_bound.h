// One-machine bound per device: the device's ops that have not started, each with a release
// (its head), a processing time and a tail, on one machine with preemption allowed. Jackson's
// preemptive schedule (always run the released op with the largest tail) minimises
// max(completion + tail) for that relaxation (Jackson 1956; Carlier, "The one-machine
// sequencing problem", EJOR 11(1), 1982, §2), so its value bounds the makespan from below.
// Usually the tightest cheap bound when one device is the bottleneck.
//
// Complexity: O(n log n) for the n ops of the device.
#pragma once

#include <vector>

#include "engine/bounds/bound_problem.h"

namespace optpipe {

struct OneMachineJob {
  double release, processing, tail;
};

// max over jobs of (preemptive completion + tail) under Jackson's rule; 0 for no jobs.
// `jobs` is reordered.
double jackson_preemptive_bound(std::vector<OneMachineJob>& jobs);

// The largest one-machine bound over the devices, at a node whose heads are `head`.
double one_machine_bound(const BoundProblem& problem, const std::vector<double>& head,
                         std::vector<OneMachineJob>& scratch);

}  // namespace optpipe
