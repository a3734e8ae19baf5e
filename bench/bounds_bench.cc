// Node-bound throughput of the batched bounds (kernels/batched_bounds.h): node bounds per second
// against the batch size, scalar loop vs Thrust on TBB (vs CUDA when a GPU is present; skipped
// otherwise). The nodes are decision points of random dives on gpt-8x24-tight
// (instances/, 576 ops), their heads computed once up front; a batch of n takes the first n of
// a pool of 4096 nodes, repeated. Counter: node_bounds/s.
#include <benchmark/benchmark.h>

#include <random>
#include <stdexcept>
#include <string>

#include "engine/bounds/bound_problem.h"
#include "engine/bounds/heads.h"
#include "engine/bounds/node_times.h"
#include "engine/instance_io.h"
#include "engine/search/candidates.h"
#include "engine/simulator.h"
#include "kernels/batched_bounds.h"

namespace optpipe {
namespace {

struct Pool {
  Instance inst;
  std::unique_ptr<BoundProblem> problem;
  NodeBatch nodes;  // 4096 nodes
};

const Pool& pool() {
  static const Pool p = [] {
    Pool out;
    out.inst = load_instance(std::string(OPTPIPE_INSTANCES_DIR) + "/gpt-8x24-tight.json");
    out.problem = std::make_unique<BoundProblem>(out.inst);
    const BoundProblem& bp = *out.problem;
    std::mt19937 rng(1);
    std::vector<double> head, finish;
    std::vector<Candidate> cands;
    CandidateStats stats;
    while (out.nodes.n < 4096) {
      Simulator sim(out.inst);
      sim.start_open();
      Simulator::Step step = sim.advance();
      while (step.kind == Simulator::Step::Kind::kDecision && out.nodes.n < 4096) {
        const auto& st = sim.state();
        NodeTimes t;
        fill_node_times(bp, st, step.time, t);
        compute_heads(bp, t, head, finish);
        out.nodes.head.insert(out.nodes.head.end(), head.begin(), head.end());
        out.nodes.finish.insert(out.nodes.finish.end(), finish.begin(), finish.end());
        out.nodes.makespan_so_far.push_back(t.makespan_so_far);
        ++out.nodes.n;
        branch_candidates(out.inst, bp, st, step.device, step.time, head, false, cands, stats);
        if (cands.empty()) break;
        sim.append(step.device, cands[std::uniform_int_distribution<std::size_t>(0, cands.size() - 1)(rng)].action);
        step = sim.advance();
      }
    }
    return out;
  }();
  return p;
}

NodeBatch take(int n) {
  const Pool& p = pool();
  const std::size_t ops = static_cast<std::size_t>(p.problem->num_ops());
  NodeBatch b;
  b.n = n;
  for (int i = 0; i < n; ++i) {
    const std::size_t k = static_cast<std::size_t>(i % p.nodes.n);
    b.head.insert(b.head.end(), p.nodes.head.begin() + k * ops, p.nodes.head.begin() + (k + 1) * ops);
    b.finish.insert(b.finish.end(), p.nodes.finish.begin() + k * ops, p.nodes.finish.begin() + (k + 1) * ops);
    b.makespan_so_far.push_back(p.nodes.makespan_so_far[k]);
  }
  return b;
}

void BM_NodeBounds(benchmark::State& state, const std::string& backend) {
  const Pool& p = pool();
  std::unique_ptr<BatchedBounds> bb;
  try {
    bb = backend == "scalar" ? make_scalar_bounds(*p.problem)
         : backend == "tbb"  ? make_tbb_bounds(*p.problem)
                             : make_cuda_bounds(*p.problem);
  } catch (const std::runtime_error& e) {
    state.SkipWithError(e.what());
    return;
  }
  const NodeBatch batch = take(static_cast<int>(state.range(0)));
  std::vector<double> bounds;
  for (auto _ : state) {
    bb->evaluate(batch, bounds);
    benchmark::DoNotOptimize(bounds.data());
  }
  state.counters["node_bounds/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * batch.n, benchmark::Counter::kIsRate);
}

void Batches(benchmark::internal::Benchmark* b) {
  for (int n : {1, 16, 256, 4096, 65536}) b->Arg(n);
  b->ArgName("batch")->Unit(benchmark::kMicrosecond)->UseRealTime();
}

BENCHMARK_CAPTURE(BM_NodeBounds, scalar, std::string("scalar"))->Apply(Batches);
BENCHMARK_CAPTURE(BM_NodeBounds, tbb, std::string("tbb"))->Apply(Batches);
BENCHMARK_CAPTURE(BM_NodeBounds, cuda, std::string("cuda"))->Apply(Batches);

}  // namespace
}  // namespace optpipe

BENCHMARK_MAIN();
