#include "runtime/shared_channels.h"

#include <chrono>
#include <stdexcept>

namespace optpipe::runtime {

SharedChannels::SharedChannels(const ChannelCounts& counts) {
  for (int n : counts.d2h) d2h_.push_back({0, 0, n});
  for (int n : counts.h2d) h2d_.push_back({0, 0, n});
}

SharedChannels::Turn& SharedChannels::turn(bool d2h, int group) {
  std::vector<Turn>& v = d2h ? d2h_ : h2d_;
  if (group < 0 || group >= static_cast<int>(v.size())) {
    throw std::logic_error("shared channels: no PCIe group " + std::to_string(group));
  }
  return v[static_cast<std::size_t>(group)];
}

void SharedChannels::acquire(bool d2h, int group, int iteration, int ticket, double timeout_s, const std::string& what) {
  std::unique_lock<std::mutex> lock(mu_);
  Turn& t = turn(d2h, group);
  const auto ready = [&] { return t.iteration == iteration && t.next == ticket; };
  if (!cv_.wait_for(lock, std::chrono::duration<double>(timeout_s), ready)) {
    throw std::runtime_error(what + ": its turn on the shared " + (d2h ? "D2H" : "H2D") + " channel of PCIe group " +
                             std::to_string(group) + " did not come within " + std::to_string(timeout_s) + " s");
  }
}

void SharedChannels::release(bool d2h, int group) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    Turn& t = turn(d2h, group);
    if (++t.next == t.total) {
      t.next = 0;
      ++t.iteration;
    }
  }
  cv_.notify_all();
}

}  // namespace optpipe::runtime
