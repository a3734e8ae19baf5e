// How busy each PCIe channel was in a simulated schedule: per group, its D2H channel (offloads)
// and its H2D channel (reloads), the time they carried transfers and how many. Read from the
// transfers that SimResult records with its timeline (spec §4: one transfer at a time per channel,
// so the busy time is the sum of the transfers' durations). A channel busy most of the makespan
// is likely what sets a tight-memory schedule's pace.
// O(T + G) for T transfers and G groups.
#pragma once

#include <vector>

#include "model/simulator.h"

namespace optpipe {

struct ChannelLoad {
  int group = 0;
  bool reload = false;   // H2D (reloads); false: D2H (offloads)
  double busy = 0;       // ms with a transfer on the channel
  int transfers = 0;     // that started
  double share(double makespan) const { return makespan > 0 ? busy / makespan : 0.0; }
};

// Two entries per group (D2H then H2D), in group order; empty when `sim` has no groups. Needs
// `sim` recorded with its timeline (SimOptions::record_timeline); without, every busy time is 0.
std::vector<ChannelLoad> channel_loads(const SimResult& sim);

// The busiest of them (the first among equals, within 1e-9 ms); nullptr when none carried anything.
const ChannelLoad* busiest_channel(const std::vector<ChannelLoad>& loads);

}  // namespace optpipe
