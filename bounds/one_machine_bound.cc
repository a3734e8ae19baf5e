#include "bounds/one_machine_bound.h"

namespace optpipe {

double jackson_preemptive_bound(std::vector<OneMachineJob>& jobs) {
  thread_local std::vector<JacksonEntry> heap;  // scratch, reused by each solver worker
  heap.resize(jobs.size());
  return jackson_core(jobs.data(), static_cast<int>(jobs.size()), heap.data());
}

double one_machine_bound(const BoundProblem& p, const std::vector<double>& head, std::vector<OneMachineJob>& scratch) {
  scratch.resize(static_cast<std::size_t>(p.num_ops()));
  thread_local std::vector<JacksonEntry> heap;  // scratch, reused by each solver worker
  heap.resize(static_cast<std::size_t>(p.num_ops()));
  return one_machine_core(view_of(p), head.data(), scratch.data(), heap.data());
}

}  // namespace optpipe
