#include "heuristics/zb_handcrafted.h"

#include <algorithm>

#include "heuristics/order_utils.h"

namespace optpipe {

Schedule delayed_w_schedule(const Instance& inst, int (*warmup)(int p, int s), int (*delay)(int p, int s)) {
  Schedule sch = empty_schedule(inst);
  const int p = inst.num_stages(), m = inst.microbatches;
  for (int s = 0; s < p; ++s) {
    auto& list = sch.devices[s];
    const int w0 = std::min(warmup(p, s), m);
    const int lag = delay(p, s);
    int f = 0, w = 0;
    while (f < w0) list.push_back(make_f(s, f++));
    for (int b = 0; b < m; ++b) {
      list.push_back(make_b(s, b));
      if (b - lag >= 0) list.push_back(make_w(s, w++));
      if (f < m) list.push_back(make_f(s, f++));
    }
    while (w < m) list.push_back(make_w(s, w++));
  }
  return sch;
}

Built ZbH1::build(const Instance& inst, const RunLimits& /*limits*/) const {
  std::string why;
  if (!require_one_stage_per_device(inst, title(), &why)) return Built::fail(why);
  if (!require_split_backward(inst, title(), &why)) return Built::fail(why);
  return Built::ok(delayed_w_schedule(
      inst, [](int p, int s) { return p - s; }, [](int, int s) { return s; }));
}

Built ZbH2::build(const Instance& inst, const RunLimits& /*limits*/) const {
  std::string why;
  if (!require_one_stage_per_device(inst, title(), &why)) return Built::fail(why);
  if (!require_split_backward(inst, title(), &why)) return Built::fail(why);
  return Built::ok(delayed_w_schedule(
      inst, [](int p, int s) { return 2 * (p - s) - 1; }, [](int, int s) { return 2 * s; }));
}

}  // namespace optpipe
