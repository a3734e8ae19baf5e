#include "heuristics/interleaved_1f1b.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "heuristics/order_utils.h"

namespace optpipe {

Built Interleaved1F1B::build(const Instance& inst, const RunLimits& /*limits*/) const {
  const int p = inst.num_devices(), S = inst.num_stages(), m = inst.microbatches;
  std::string why;
  // With one device the loop and the V placement coincide (Instance::placement() says V).
  const bool one_device = p == 1 && S >= 2;
  if (!one_device && !require_loop_placement(inst, title(), &why)) return Built::fail(why);
  const int v = S / p;

  // The table of virtual microbatches, (chunk, microbatch) in forward order: rounds of
  // microbatches, chunk-major inside a round. Round sizes differ by at most one, larger first.
  const int rounds = std::max(1, m / p);
  const int first_round = m / rounds + (m % rounds != 0 ? 1 : 0);
  std::vector<std::pair<int, int>> table;
  table.reserve(static_cast<std::size_t>(v) * m);
  for (int g = 0, base = 0; g < rounds; ++g) {
    const int size = m / rounds + (g < m % rounds ? 1 : 0);
    for (int c = 0; c < v; ++c) {
      for (int i = 0; i < size; ++i) table.emplace_back(c, base + i);
    }
    base += size;
  }

  Schedule sch = empty_schedule(inst);
  const int total = v * m;
  for (int r = 0; r < p; ++r) {
    auto& list = sch.devices[r];
    auto forward = [&](int k) { list.push_back(make_f(table[k].first * p + r, table[k].second)); };
    auto backward = [&](int k) {
      push_backward(list, inst, (v - 1 - table[k].first) * p + r, table[k].second);
    };
    const int warmup = std::min(2 * (p - r - 1) + (v - 1) * first_round, total);
    int f = 0, b = 0;
    while (f < warmup) forward(f++);
    while (f < total) {
      forward(f++);
      backward(b++);
    }
    while (b < total) backward(b++);
  }
  std::string detail;
  if (m % p != 0) {
    detail = std::to_string(rounds) + " microbatch round(s) of " + std::to_string(m / rounds) +
             (m % rounds != 0 ? "-" + std::to_string(first_round) : "") + " (m not a multiple of p)";
  }
  return Built::ok(std::move(sch), std::move(detail));
}

}  // namespace optpipe
