#include "bounds/pair_tails.h"

#include <algorithm>
#include <array>
#include <limits>

namespace optpipe {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// A max-plus affine function of the sources: max(x + a, y + b).
struct MaxPlus {
  double a = kNegInf, b = kNegInf;
  MaxPlus plus(double d) const { return {a + d, b + d}; }
};
MaxPlus max_of(MaxPlus u, MaxPlus v) { return {std::max(u.a, v.a), std::max(u.b, v.b)}; }

// A partial choice: the ends of B(t, j) and B(t, k) at the last stage placed, the makespan so far.
struct Partial {
  std::array<MaxPlus, 3> v;  // bj, bk, makespan
  bool no_larger(const Partial& o) const {
    constexpr double kEps = 1e-9;
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (v[i].a > o.v[i].a + kEps || v[i].b > o.v[i].b + kEps) return false;
    }
    return true;
  }
};

// Adds `c` to `out` unless one there is no larger; drops those no smaller than it.
void add_undominated(std::vector<Partial>& out, const Partial& c) {
  for (const Partial& q : out) {
    if (q.no_larger(c)) return;
  }
  std::erase_if(out, [&](const Partial& q) { return c.no_larger(q); });
  out.push_back(c);
}

}  // namespace

std::vector<PairTailChoice> pair_tail_choices(const BoundProblem& p, int s, int max_states) {
  std::vector<PairTailChoice> out;
  if (s <= 0 || s >= p.S || p.m < 2 || p.types != 3) return out;
  const int S = p.S;
  std::vector<Partial> cur{Partial{{MaxPlus{0.0, kNegInf}, MaxPlus{kNegInf, 0.0}, MaxPlus{}}}};
  std::vector<Partial> next;
  for (int t = s - 1; t >= 0; --t) {
    const double b = p.dur[1 * S + t], w = p.dur[2 * S + t], comm = p.comm_after[t];
    next.clear();
    for (const Partial& q : cur) {
      const MaxPlus rj = q.v[0].plus(comm), rk = q.v[1].plus(comm);
      const MaxPlus bj = rj.plus(b);
      {  // Bj Wj Bk Wk
        const MaxPlus wj = bj.plus(w);
        const MaxPlus bk = max_of(wj, rk).plus(b);
        const MaxPlus wk = bk.plus(w);
        add_undominated(next, Partial{{bj, bk, max_of(q.v[2], wk)}});
      }
      {  // Bj Bk Wj Wk
        const MaxPlus bk = max_of(bj, rk).plus(b);
        const MaxPlus wk = bk.plus(2 * w);
        add_undominated(next, Partial{{bj, bk, max_of(q.v[2], wk)}});
      }
    }
    const std::size_t keep = static_cast<std::size_t>(std::max(1, max_states));
    if (next.size() > keep) {  // merge the rest: below each
      Partial merged = next[keep - 1];
      for (std::size_t i = keep; i < next.size(); ++i) {
        for (std::size_t k = 0; k < merged.v.size(); ++k) {
          merged.v[k].a = std::min(merged.v[k].a, next[i].v[k].a);
          merged.v[k].b = std::min(merged.v[k].b, next[i].v[k].b);
        }
      }
      next.resize(keep - 1);
      next.push_back(merged);
    }
    cur.swap(next);
  }
  for (const Partial& q : cur) {
    const PairTailChoice c{q.v[2].a, q.v[2].b};
    bool dominated = false;
    for (const PairTailChoice& o : out) dominated = dominated || (o.a <= c.a + 1e-9 && o.b <= c.b + 1e-9);
    if (dominated) continue;
    std::erase_if(out, [&](const PairTailChoice& o) { return c.a <= o.a + 1e-9 && c.b <= o.b + 1e-9; });
    out.push_back(c);
  }
  return out;
}

double pair_tail(const std::vector<PairTailChoice>& choices, double x, double y) {
  double best = std::numeric_limits<double>::infinity();
  for (const PairTailChoice& c : choices) best = std::min(best, std::max(x + c.a, y + c.b));
  return choices.empty() ? kNegInf : best;
}

}  // namespace optpipe
