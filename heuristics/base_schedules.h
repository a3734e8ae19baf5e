// Memory-oblivious starting points for the offload heuristics: the lists of every fixed-pattern
// heuristic that applies to the instance, and the ZB greedy scheduler run without the devices'
// limits (unbudgeted, and with budgets of p, 1.5p and 2p activations), each with the makespan
// it reaches when memory is unlimited, best first.
#pragma once

#include <string>
#include <vector>

#include "model/instance.h"
#include "model/schedule.h"

namespace optpipe {

struct BaseSchedule {
  std::string origin;      // e.g. "1F1B", "ZB greedy (no memory limit, B first)"
  Schedule schedule;       // no offload
  double free_makespan;    // makespan with memory limits ignored
};

// At most `limit` distinct bases, sorted by free_makespan (ties: registry order).
std::vector<BaseSchedule> memory_oblivious_bases(const Instance& instance, std::size_t limit = 16);

}  // namespace optpipe
