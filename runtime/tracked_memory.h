// A device's activation memory as the executor accounts for it (issue 7): the spec's bytes
// (static + what F allocates, minus what offloads, B and W free; spec §4), with the spec's
// waits: an allocation waits until it fits under the limit (an F blocks its compute stream
// meanwhile; a reload blocks only its copy stream). The real buffers of the model are smaller
// or larger than the instance says; the schedule was made for the instance's bytes, so those
// are what decide when things may run. The peak is recorded.
#pragma once

#include <condition_variable>
#include <mutex>
#include <string>

namespace optpipe::runtime {

class TrackedMemory {
 public:
  TrackedMemory(double static_bytes, double limit, double tolerance = 1.0)
      : used_(static_bytes), peak_(static_bytes), limit_(limit + tolerance) {}

  // Adds `bytes` once used + bytes <= limit; throws std::runtime_error naming `what` if that
  // does not happen within `timeout_s` (a deadlock: nothing will free memory).
  void allocate(double bytes, double timeout_s, const std::string& what);
  // The same, but also waits until every allocation with a smaller ticket was granted
  // (program.h: the simulated allocation order). restart_order() begins a new sequence.
  void allocate_in_order(double bytes, int ticket, double timeout_s, const std::string& what);
  void restart_order();
  void release(double bytes);
  double used() const;
  double peak() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  double used_, peak_, limit_;
  int next_ticket_ = 0;
};

}  // namespace optpipe::runtime
