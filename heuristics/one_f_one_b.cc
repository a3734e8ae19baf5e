#include "heuristics/one_f_one_b.h"

#include <algorithm>

#include "heuristics/order_utils.h"

namespace optpipe {

Built OneFOneB::build(const Instance& inst, const RunLimits& /*limits*/) const {
  std::string why;
  if (!require_one_stage_per_device(inst, title(), &why)) return Built::fail(why);
  Schedule sch = empty_schedule(inst);
  const int p = inst.num_stages(), m = inst.microbatches;
  for (int s = 0; s < p; ++s) {
    auto& list = sch.devices[s];
    const int warmup = std::min(p - s - 1, m);
    int f = 0, b = 0;
    while (f < warmup) list.push_back(make_f(s, f++));
    while (f < m) {
      list.push_back(make_f(s, f++));
      push_backward(list, inst, s, b++);
    }
    while (b < m) push_backward(list, inst, s, b++);
  }
  return Built::ok(std::move(sch));
}

}  // namespace optpipe
