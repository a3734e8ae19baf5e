#include "bounds/channel_bound.h"

#include "bounds/channel_bound_core.h"

namespace optpipe {

double channel_bound(const BoundProblem& p, const NodeTransfers& nt, const std::vector<double>& finish,
                     const std::vector<double>& reload_lb, std::vector<OneMachineJob>& scratch) {
  const BoundProblemView v = view_of(p);
  const std::size_t n = static_cast<std::size_t>(channel_scratch_jobs(v));
  if (scratch.size() < n) scratch.resize(n);
  thread_local std::vector<JacksonEntry> heap;  // scratch, reused by each solver worker
  if (heap.size() < n) heap.resize(n);
  return channel_bound_core(v, view_of(nt), finish.data(), reload_lb.data(), scratch.data(), heap.data());
}

}  // namespace optpipe
