#include "bounds/node_times.h"

#include <algorithm>
#include <limits>

namespace optpipe {

void fill_node_times(const BoundProblem& p, const Simulator::Snapshot& st, double t, NodeTimes& out) {
  const int n = p.num_ops();
  out.end.resize(static_cast<std::size_t>(n));
  out.makespan_so_far = st.makespan;
  for (int o = 0; o < n; ++o) {
    const double e = st.end[o];
    if (e == e) {
      out.end[o] = e;
    } else if (st.start[o] == st.start[o]) {
      const int type = o / (p.S * p.m);
      const int s = (o / p.m) % p.S;
      out.end[o] = st.start[o] + p.dur[type * p.S + s];
      out.makespan_so_far = std::max(out.makespan_so_far, out.end[o]);
    } else {
      out.end[o] = std::numeric_limits<double>::quiet_NaN();
    }
  }
  out.device_free.resize(static_cast<std::size_t>(p.D));
  for (int d = 0; d < p.D; ++d) out.device_free[d] = std::max(t, st.running[d] ? st.run_end[d] : st.now[d]);
}

}  // namespace optpipe
