#include "bounds/memory_energy_bound.h"

#include "bounds/memory_energy_bound_core.h"

namespace optpipe {

double memory_energy_bound(const BoundProblem& p, const NodeTimes& node, const NodeTransfers* nt,
                           const std::vector<double>& head, const std::vector<double>& finish,
                           const std::vector<double>& offload_lb, double enough) {
  const BoundProblemView v = view_of(p);
  thread_local std::vector<double> scratch;  // reused by each solver worker
  scratch.resize(static_cast<std::size_t>(memory_energy_scratch_doubles(v)));
  NodeTransfersView tv;
  if (nt) tv = view_of(*nt);
  return memory_energy_bound_core(v, node.end.data(), node.device_free.data(), nt ? &tv : nullptr, head.data(),
                                  finish.data(), nt ? offload_lb.data() : nullptr, enough, scratch.data());
}

}  // namespace optpipe
