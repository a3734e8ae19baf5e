#include "heuristics/gpipe.h"

#include "heuristics/order_utils.h"

namespace optpipe {

Built GPipe::build(const Instance& inst, const RunLimits& /*limits*/) const {
  Schedule sch = empty_schedule(inst);
  const auto stages = inst.stages_by_device();
  for (int d = 0; d < inst.num_devices(); ++d) {
    auto& list = sch.devices[d];
    for (int j = 0; j < inst.microbatches; ++j) {
      for (int s : stages[d]) list.push_back(make_f(s, j));
    }
    for (int j = 0; j < inst.microbatches; ++j) {
      for (auto it = stages[d].rbegin(); it != stages[d].rend(); ++it) push_backward(list, inst, *it, j);
    }
  }
  return Built::ok(std::move(sch));
}

}  // namespace optpipe
