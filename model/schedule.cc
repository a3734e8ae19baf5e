#include "model/schedule.h"

namespace optpipe {

std::size_t Schedule::num_actions() const {
  std::size_t n = 0;
  for (const auto& list : devices) n += list.size();
  return n;
}

bool Schedule::has_offload() const {
  for (const auto& list : devices) {
    for (const Action& a : list) {
      if (a.type == OpType::R || (a.type == OpType::F && a.r > 0)) return true;
    }
  }
  return false;
}

Schedule infeasible_schedule(const std::string& instance, int num_devices, const std::string& why) {
  Schedule none;
  none.instance = instance;
  none.devices.assign(static_cast<std::size_t>(num_devices), {});
  none.status = "infeasible";
  none.solver = why;
  return none;
}

}  // namespace optpipe
