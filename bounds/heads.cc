#include "bounds/heads.h"

#include "bounds/heads_core.h"
#include "bounds/node_times.h"
#include "model/simulator.h"

namespace optpipe {

void compute_heads(const BoundProblem& p, const NodeTimes& node, std::vector<double>& head,
                   std::vector<double>& finish, const NodeTransfers* nt, std::vector<double>* offload_out,
                   std::vector<double>* reload_out) {
  const BoundProblemView v = view_of(p);
  const std::size_t ops = static_cast<std::size_t>(p.num_ops());
  head.resize(ops);
  finish.resize(ops);
  thread_local std::vector<double> scratch;
  scratch.resize(static_cast<std::size_t>(heads_scratch_doubles(v)));
  NodeTransfersView tv;
  double* off_lb = nullptr;
  double* rel_lb = nullptr;
  if (nt) {
    tv = view_of(*nt);
    const std::size_t sm = static_cast<std::size_t>(p.S) * static_cast<std::size_t>(p.m);
    if (offload_out) {
      offload_out->resize(sm);
      off_lb = offload_out->data();
    }
    if (reload_out) {
      reload_out->resize(sm);
      rel_lb = reload_out->data();
    }
  }
  compute_heads_core(v, node.end.data(), node.device_free.data(), nt ? &tv : nullptr, head.data(), finish.data(),
                     off_lb, rel_lb, scratch.data());
}

std::vector<double> root_heads(const Instance& instance, const BoundProblem& problem) {
  Simulator sim(instance);
  sim.start_open();
  const Simulator::Step step = sim.advance();
  NodeTimes times;
  fill_node_times(problem, sim.snapshot(), step.time, times);
  std::vector<double> head, finish;
  compute_heads(problem, times, head, finish);
  return head;
}

}  // namespace optpipe
