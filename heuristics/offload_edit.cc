#include "heuristics/offload_edit.h"

#include <algorithm>

namespace optpipe {

int find_action(const std::vector<Action>& list, OpType type, int s, int j) {
  for (std::size_t k = 0; k < list.size(); ++k) {
    if (list[k].type == type && list[k].stage == s && list[k].mb == j) return static_cast<int>(k);
  }
  return -1;
}

std::pair<int, int> reload_range(const Schedule& sch, int d, int s, int j) {
  const auto& list = sch.devices[d];
  int lo = find_action(list, OpType::F, s, j) + 1;
  int hi = find_action(list, OpType::B, s, j);
  for (int k = 0; k < static_cast<int>(list.size()); ++k) {
    const Action& a = list[k];
    if (a.type != OpType::R || a.stage != s) continue;
    if (a.mb < j) lo = std::max(lo, k + 1);
    if (a.mb > j) hi = std::min(hi, k);
  }
  return {lo, std::max(lo, hi)};
}

int latest_hidden_position(const Schedule& sch, const std::vector<ActionTiming>& timeline, int d, int s, int j,
                           double reload_ms, double deadline) {
  const auto [lo, hi] = reload_range(sch, d, s, j);
  const auto& list = sch.devices[d];
  for (int p = hi; p >= lo; --p) {
    // Request time at position p: end of the last compute action before p.
    double request = 0;
    for (int k = p - 1; k >= 0; --k) {
      if (list[k].is_compute()) {
        request = timeline[k].end;
        break;
      }
    }
    if (request + reload_ms <= deadline + kTimeEps) return p;
  }
  return lo;
}

void set_offload(Schedule& sch, int d, int s, int j, double r, int position) {
  auto& list = sch.devices[d];
  const int f = find_action(list, OpType::F, s, j);
  if (f < 0) return;
  const int existing = find_action(list, OpType::R, s, j);
  if (existing >= 0) list.erase(list.begin() + existing);
  list[f].r = r;
  if (r <= 0) return;
  const auto [lo, hi] = reload_range(sch, d, s, j);
  const int pos = std::clamp(position, lo, hi);
  list.insert(list.begin() + pos, make_r(s, j));
}

double offload_level(const Schedule& sch, int d, int s, int j) {
  const int f = find_action(sch.devices[d], OpType::F, s, j);
  return f < 0 ? 0.0 : sch.devices[d][f].r;
}

}  // namespace optpipe
