#include "heuristics/zb_v.h"

#include <algorithm>

#include "heuristics/order_utils.h"

namespace optpipe {

Built ZbV::build(const Instance& inst, const RunLimits& /*limits*/) const {
  std::string why;
  if (!require_v_placement(inst, title(), &why)) return Built::fail(why);
  if (!require_split_backward(inst, title(), &why)) return Built::fail(why);
  const int p = inst.num_devices(), m = inst.microbatches;
  const int n = std::max(2 * p - 1, m);
  Schedule sch = empty_schedule(inst);
  for (int r = 0; r < p; ++r) {
    auto& list = sch.devices[r];
    const int s0 = r, s1 = 2 * p - 1 - r;
    int f0 = 0, f1 = 0, b0 = 0, b1 = 0, w0 = 0, w1 = 0;
    // Microbatches >= m exist only in the generator (n >= m); they are not emitted.
    auto put = [&](Action a) {
      if (a.mb < m) list.push_back(a);
    };
    for (int k = 0; k < 2 * (p - r) - 1; ++k) put(make_f(s0, f0++));
    for (int k = 0; k < r; ++k) {
      put(make_f(s1, f1++));
      put(make_f(s0, f0++));
    }
    for (int k = 0; k < p - r; ++k) {
      put(make_f(s1, f1++));
      put(make_b(s1, b1));
      put(make_w(s1, b1++));
    }
    while (f1 < f0 || f0 < n) {
      if (f0 < n) put(make_f(s0, f0++));
      put(make_b(s0, b0));
      put(make_w(s0, b0++));
      put(make_f(s1, f1++));
      put(make_b(s1, b1));
      put(make_w(s1, b1++));
    }
    w0 = b0;
    w1 = b1;
    for (int k = 0; k < r; ++k) {
      put(make_b(s0, b0++));
      put(make_b(s1, b1++));
    }
    for (int k = 0; k < p - r; ++k) {
      put(make_b(s0, b0++));
      put(make_w(s0, w0++));
    }
    while (w1 < b1) put(make_w(s1, w1++));
    while (w0 < b0) put(make_w(s0, w0++));
    if (f0 != n || f1 != n || b0 != n || b1 != n || w0 != n || w1 != n) {
      return Built::fail("internal error: ZB-V's generator lost count on device " + std::to_string(r));
    }
  }
  return Built::ok(std::move(sch));
}

}  // namespace optpipe
