#include "model/checkpointed_simulation.h"

#include <algorithm>
#include <climits>

namespace optpipe {

CheckpointedSimulation::CheckpointedSimulation(const Instance& instance, int checkpoints)
    : sim_(instance), wanted_(std::max(1, checkpoints)) {}

int CheckpointedSimulation::shared_checkpoint(const Schedule& schedule) {
  if (!has_base_ || checkpoints_.empty() || schedule.num_devices() != base_.num_devices()) return -1;
  const int D = schedule.num_devices();
  first_diff_.assign(D, INT_MAX);
  for (int d = 0; d < D; ++d) {
    const auto& a = schedule.devices[d];
    const auto& b = base_.devices[d];
    const std::size_t n = std::min(a.size(), b.size());
    std::size_t k = 0;
    while (k < n && a[k] == b[k]) ++k;
    if (k < n || a.size() != b.size()) first_diff_[d] = static_cast<int>(k);
  }
  // A checkpoint is shared when no device had reached its first differing entry; the program
  // counters only grow, so the shared checkpoints are a prefix: the last one by bisection.
  auto shared = [&](int c) {
    const auto& pc = checkpoints_[c].pc;
    for (int d = 0; d < D; ++d) {
      if (pc[d] >= first_diff_[d]) return false;
    }
    return true;
  };
  int lo = -1, hi = static_cast<int>(checkpoints_.size());  // shared(lo) (or none), !shared(hi)
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    (shared(mid) ? lo : hi) = mid;
  }
  return lo;
}

SimResult CheckpointedSimulation::set_base(const Schedule& schedule) {
  ++stats_.bases;
  const int c = shared_checkpoint(schedule);
  if (!has_base_) {
    std::size_t entries = 0;
    for (const auto& lst : schedule.devices) entries += lst.size();
    every_ = std::max<int>(1, static_cast<int>(entries / static_cast<std::size_t>(wanted_)));
  }
  std::vector<Simulator::Snapshot> fresh;
  SimResult r;
  if (c >= 0) {
    r = sim_.resume(schedule, checkpoints_[c], every_, &fresh);
    checkpoints_.resize(static_cast<std::size_t>(c) + 1);
  } else {
    r = sim_.run_recording(schedule, every_, fresh);
    checkpoints_.clear();
  }
  for (auto& s : fresh) checkpoints_.push_back(std::move(s));
  base_ = schedule;
  has_base_ = true;
  return r;
}

SimResult CheckpointedSimulation::run(const Schedule& schedule) {
  ++stats_.runs;
  const int c = shared_checkpoint(schedule);
  if (c < 0) return sim_.run(schedule, SimOptions::quiet());
  ++stats_.resumed;
  return sim_.resume(schedule, checkpoints_[c]);
}

}  // namespace optpipe
