#include "bounds/last_tails.h"

#include <algorithm>
#include <limits>

namespace optpipe {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();
constexpr int K = kMaxLastTailMicrobatches;

// A max-plus affine function of the sources: max_i (x_i + a[i]).
struct MaxPlus {
  std::array<double, K> a{kNegInf, kNegInf, kNegInf};
  MaxPlus plus(double d) const {
    MaxPlus r = *this;
    for (double& v : r.a) v += d;
    return r;
  }
};
MaxPlus max_of(const MaxPlus& u, const MaxPlus& v) {
  MaxPlus r;
  for (int i = 0; i < K; ++i) r.a[i] = std::max(u.a[i], v.a[i]);
  return r;
}

// A partial choice: the ends of the k B's at the last stage placed, then the makespan so far.
struct Partial {
  std::array<MaxPlus, K + 1> v;
  bool no_larger(const Partial& o, int k) const {
    constexpr double kEps = 1e-9;
    for (int i = 0; i <= k; ++i) {
      const int at = i == k ? K : i;
      for (int j = 0; j < k; ++j) {
        if (v[at].a[j] > o.v[at].a[j] + kEps) return false;
      }
    }
    return true;
  }
};

// Adds `c` to `out` unless one there is no larger; drops those no smaller than it.
void add_undominated(std::vector<Partial>& out, const Partial& c, int k) {
  for (const Partial& q : out) {
    if (q.no_larger(c, k)) return;
  }
  std::erase_if(out, [&](const Partial& q) { return c.no_larger(q, k); });
  out.push_back(c);
}

// The interleavings of k B's and k W's: each W after its own B, both types in order. Op i < k is
// B(i), k + i is W(i).
std::vector<std::vector<int>> interleavings(int k) {
  std::vector<std::vector<int>> out;
  std::vector<int> cur;
  auto grow = [&](auto&& self, int nb, int nw) -> void {
    if (nb == k && nw == k) {
      out.push_back(cur);
      return;
    }
    if (nb < k) {
      cur.push_back(nb);
      self(self, nb + 1, nw);
      cur.pop_back();
    }
    if (nw < nb) {
      cur.push_back(k + nw);
      self(self, nb, nw + 1);
      cur.pop_back();
    }
  };
  grow(grow, 0, 0);
  return out;
}

}  // namespace

LastTails last_tail_choices(const BoundProblem& p, int s, int k, int max_states) {
  LastTails out;
  k = std::min({k, K, p.m});
  if (s <= 0 || s >= p.S || k < 2 || p.types != 3) return out;
  out.k = k;
  const int S = p.S;
  const std::vector<std::vector<int>> orders = interleavings(k);
  Partial start;
  for (int i = 0; i < k; ++i) start.v[i].a[i] = 0.0;
  std::vector<Partial> cur{start}, next;
  const std::size_t keep = static_cast<std::size_t>(std::max(1, max_states));
  for (int t = s - 1; t >= 0; --t) {
    const double b = p.dur[1 * S + t], w = p.dur[2 * S + t], comm = p.comm_after[t];
    next.clear();
    for (const Partial& q : cur) {
      for (const std::vector<int>& order : orders) {
        Partial n;
        MaxPlus free;
        for (const int op : order) {
          if (op < k) {
            free = max_of(free, q.v[op].plus(comm)).plus(b);
            n.v[op] = free;
          } else {
            free = max_of(free, n.v[op - k]).plus(w);
          }
        }
        n.v[K] = max_of(q.v[K], free);  // the last W ends last on this stage
        add_undominated(next, n, k);
      }
    }
    if (next.size() > keep) {  // merge the rest: below each
      Partial merged = next[keep - 1];
      for (std::size_t i = keep; i < next.size(); ++i) {
        for (std::size_t x = 0; x < merged.v.size(); ++x) {
          for (int j = 0; j < K; ++j) merged.v[x].a[j] = std::min(merged.v[x].a[j], next[i].v[x].a[j]);
        }
      }
      next.resize(keep - 1);
      next.push_back(merged);
    }
    cur.swap(next);
  }
  auto no_larger = [&](const LastTailChoice& a, const LastTailChoice& b) {
    for (int j = 0; j < k; ++j) {
      if (a.c[j] > b.c[j] + 1e-9) return false;
    }
    return true;
  };
  for (const Partial& q : cur) {
    LastTailChoice c;
    for (int j = 0; j < K; ++j) c.c[j] = j < k ? q.v[K].a[j] : kNegInf;
    bool dominated = false;
    for (const LastTailChoice& o : out.choices) dominated = dominated || no_larger(o, c);
    if (dominated) continue;
    std::erase_if(out.choices, [&](const LastTailChoice& o) { return no_larger(c, o); });
    out.choices.push_back(c);
  }
  return out;
}

double last_tail(const LastTails& tails, const double* x) {
  if (tails.empty()) return kNegInf;
  double best = std::numeric_limits<double>::infinity();
  for (const LastTailChoice& c : tails.choices) {
    double v = kNegInf;
    for (int i = 0; i < tails.k; ++i) v = std::max(v, x[i] + c.c[i]);
    best = std::min(best, v);
  }
  return best;
}

}  // namespace optpipe
