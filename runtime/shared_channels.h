// The PCIe channels that devices of one pcie_group share (spec §4: one D2H and one H2D channel
// per group, serving requests strictly in order, a waiting reload holding later ones behind
// it), for executors that run in one process (the threads transport). Each transfer waits for
// its turn in the channel's simulated order (program.h: channel tickets), runs, and passes the
// turn on; the order restarts with every iteration. Devices in separate processes (MPI) keep
// their own copy streams: on GPUs the shared PCIe switch itself does the sharing.
#pragma once

#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/program.h"

namespace optpipe::runtime {

class SharedChannels {
 public:
  explicit SharedChannels(const ChannelCounts& counts);
  // Waits until `ticket` is next on the group's D2H (`d2h`) or H2D channel in `iteration`;
  // throws std::runtime_error naming `what` after `timeout_s`.
  void acquire(bool d2h, int group, int iteration, int ticket, double timeout_s, const std::string& what);
  // The transfer holding the channel is done: the next one may start.
  void release(bool d2h, int group);

 private:
  struct Turn {
    int iteration = 0, next = 0, total = 0;
  };
  Turn& turn(bool d2h, int group);
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Turn> d2h_, h2d_;
};

}  // namespace optpipe::runtime
