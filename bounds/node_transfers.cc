#include "bounds/node_transfers.h"

#include <algorithm>
#include <limits>

namespace optpipe {

void fill_node_transfers(const BoundProblem& p, const Simulator::Snapshot& st, double time, NodeTransfers& out) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const int n = p.S * p.m;
  out.now = time;
  out.level.assign(n, nan);
  out.offload_start.assign(n, nan);
  out.offload_end.assign(n, nan);
  out.reload_start.assign(n, nan);
  out.reload_end.assign(n, nan);
  for (int s = 0; s < p.S; ++s) {
    // F(s, j) is listed for j < next_mb[F][s] (open simulation); its level is set at append.
    const int listed = st.next_mb.empty() ? p.m : st.next_mb[static_cast<std::size_t>(OpType::F) * p.S + s];
    for (int j = 0; j < listed; ++j) out.level[s * p.m + j] = st.level[static_cast<std::size_t>(s) * p.m + j];
  }
  for (const Transfer& tr : st.transfers) {
    if (!tr.started) continue;
    const int sj = tr.stage * p.m + tr.mb;
    if (tr.kind == Transfer::Kind::kOffload) {
      out.offload_start[sj] = tr.start;
      out.offload_end[sj] = tr.end;
    } else {
      out.reload_start[sj] = tr.start;
      out.reload_end[sj] = tr.end;
    }
  }
  out.d2h_free.assign(p.G, time);
  out.h2d_free.assign(p.G, time);
  for (int g = 0; g < p.G && g < static_cast<int>(st.d2h.size()); ++g) {
    if (st.d2h[g].busy) out.d2h_free[g] = std::max(time, st.d2h[g].busy_end);
    if (st.h2d[g].busy) out.h2d_free[g] = std::max(time, st.h2d[g].busy_end);
  }
}

}  // namespace optpipe
