#include "heuristics/order_utils.h"

namespace optpipe {

Schedule empty_schedule(const Instance& instance) {
  Schedule s;
  s.instance = instance.name;
  s.devices.assign(instance.num_devices(), {});
  return s;
}

bool require_one_stage_per_device(const Instance& inst, const std::string& title, std::string* why) {
  if (inst.placement() == Placement::kOnePerDevice) return true;
  *why = title + " needs one stage per device with stage s on device s (this instance's placement: " +
         to_string(inst.placement()) + ")";
  return false;
}

bool require_v_placement(const Instance& inst, const std::string& title, std::string* why) {
  if (inst.placement() == Placement::kV) return true;
  *why = title + " needs the V placement, two stages per device (this instance's placement: " +
         to_string(inst.placement()) + ")";
  return false;
}

bool require_loop_placement(const Instance& inst, const std::string& title, std::string* why) {
  if (inst.placement() == Placement::kLoop) return true;
  *why = title + " needs a loop placement, stage s on device s mod D with at least two stages per device "
                 "(this instance's placement: " + to_string(inst.placement()) + ")";
  return false;
}

bool require_split_backward(const Instance& inst, const std::string& title, std::string* why) {
  if (inst.split_backward) return true;
  *why = title + " needs a split backward (B and W); this instance has split_backward = false";
  return false;
}

void push_backward(std::vector<Action>& list, const Instance& inst, int s, int j) {
  list.push_back(make_b(s, j));
  if (inst.split_backward) list.push_back(make_w(s, j));
}

}  // namespace optpipe
