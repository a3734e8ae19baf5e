#include "bounds/pair_releases.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace optpipe {

std::vector<PairOrder> pair_release_orders(const BoundProblem& p, int s) {
  std::vector<PairOrder> out;
  const int first = s + 1, last = p.S - 1;
  if (s < 0 || first > last) return out;
  constexpr double kNegInf = -std::numeric_limits<double>::infinity();
  auto fd = [&](int t) { return p.dur[0 * p.S + t]; };
  auto bd = [&](int t) { return p.dur[1 * p.S + t]; };
  const std::size_t n = static_cast<std::size_t>(p.S);
  std::vector<double> fj(n), fk(n), bj(n), bk(n);  // earliest starts, per stage
  for (int tau = first; tau <= last + 1; ++tau) {  // B(t, j) before F(t, k) exactly for t >= tau
    PairOrder order;
    for (int source = 0; source < 2; ++source) {  // 0: from x alone, 1: from y alone (max-plus)
      std::fill(fj.begin(), fj.end(), kNegInf);
      std::fill(fk.begin(), fk.end(), kNegInf);
      std::fill(bj.begin(), bj.end(), kNegInf);
      std::fill(bk.begin(), bk.end(), kNegInf);
      (source == 0 ? fj : fk)[first] = 0.0;
      // Longest paths by relaxing every edge until nothing changes: the order's graph is acyclic
      // (see the header), so 4 (S - s) + 1 passes suffice.
      bool changed = true;
      int passes = 0;
      auto raise = [&](double& v, double w) {
        if (w > v) {
          v = w;
          changed = true;
        }
      };
      while (changed) {
        if (++passes > 4 * (last - s) + 2) throw std::logic_error("pair_release_orders: a cycle");
        changed = false;
        for (int t = first; t <= last; ++t) {
          const std::size_t u = static_cast<std::size_t>(t);
          if (t > first) {  // forward chains
            raise(fj[u], fj[u - 1] + fd(t - 1) + p.comm_after[t - 1]);
            raise(fk[u], fk[u - 1] + fd(t - 1) + p.comm_after[t - 1]);
          }
          if (t < last) {  // backward chains
            raise(bj[u], bj[u + 1] + bd(t + 1) + p.comm_after[t]);
            raise(bk[u], bk[u + 1] + bd(t + 1) + p.comm_after[t]);
          } else {  // the last stage's B after its own F
            raise(bj[u], fj[u] + fd(t));
            raise(bk[u], fk[u] + fd(t));
          }
          raise(fk[u], fj[u] + fd(t));  // FIFO per stage and type
          raise(bk[u], bj[u] + bd(t));
          if (t >= tau) {
            raise(fk[u], bj[u] + bd(t));
          } else {
            raise(bj[u], fk[u] + fd(t));
          }
        }
      }
      const std::size_t f = static_cast<std::size_t>(first);
      const double back = bd(first) + p.comm_after[s];
      (source == 0 ? order.aj : order.bj) = bj[f] + back;
      (source == 0 ? order.ak : order.bk) = bk[f] + back;
    }
    out.push_back(order);
  }
  return out;
}

void pair_releases(const std::vector<PairOrder>& orders, double comm, double fj, double fk, double floor_j,
                   double floor_k, std::vector<PairRelease>& out) {
  // Pairs within a hair count as equal: the orders' paths sum the same times in other orders.
  constexpr double kEps = 1e-9;
  out.clear();
  const double x = fj + comm, y = fk + comm;
  for (const PairOrder& o : orders) {
    const PairRelease r{std::max({floor_j, x + o.aj, y + o.bj}), std::max({floor_k, x + o.ak, y + o.bk})};
    bool dominated = false;
    for (const PairRelease& q : out) dominated = dominated || (q.j <= r.j + kEps && q.k <= r.k + kEps);
    if (dominated) continue;
    std::erase_if(out, [&](const PairRelease& q) { return r.j <= q.j + kEps && r.k <= q.k + kEps; });
    out.push_back(r);
  }
}

}  // namespace optpipe
