// Node-bound throughput of the batched bounds (kernels/batched_bounds.h): node bounds per second
// against the batch size, scalar loop vs Thrust on TBB (vs CUDA when a GPU is present; skipped
// otherwise). The nodes are decision points of random dives on gpt-8x24-tight (instances/, 576
// ops), by their times and transfers; a batch of n takes the first n of a pool of 4096 nodes,
// repeated. The batch computes the heads (with the memory rules) and the whole bound (critical
// path, one machine, channel, memory energy): compute_bounds.
// Counters: node_bounds/s; state_bytes, the bytes of one node state in the batch.
#include <benchmark/benchmark.h>

#include <random>
#include <stdexcept>
#include <string>

#include "bounds/bound_problem.h"
#include "bounds/heads.h"
#include "bounds/node_times.h"
#include "bounds/node_transfers.h"
#include "model/instance_io.h"
#include "search/candidates.h"
#include "model/simulator.h"
#include "kernels/batched_bounds.h"

namespace optpipe {
namespace {

struct Pool {
  Instance inst;
  std::unique_ptr<BoundProblem> problem;
  NodeTimesBatch times;  // 4096 nodes by their times and transfers
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
    while (out.times.n < 4096) {
      Simulator sim(out.inst);
      sim.start_open();
      Simulator::Step step = sim.advance();
      while (step.kind == Simulator::Step::Kind::kDecision && out.times.n < 4096) {
        const auto& st = sim.snapshot();
        NodeTimes t;
        fill_node_times(bp, st, step.time, t);
        NodeTransfers nt;
        fill_node_transfers(bp, st, step.time, nt);
        out.times.add(t, &nt);
        compute_heads(bp, t, head, finish);  // for the candidates' earliest starts
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

NodeTimesBatch take_times(int n) {
  const Pool& p = pool();
  const NodeTimesBatch& a = p.times;
  const std::size_t ops = static_cast<std::size_t>(p.problem->num_ops());
  const std::size_t sm = static_cast<std::size_t>(p.problem->S) * static_cast<std::size_t>(p.problem->m);
  const std::size_t D = static_cast<std::size_t>(p.problem->D), G = static_cast<std::size_t>(p.problem->G);
  auto copy = [](std::vector<double>& to, const std::vector<double>& from, std::size_t k, std::size_t len) {
    to.insert(to.end(), from.begin() + static_cast<std::ptrdiff_t>(k * len),
              from.begin() + static_cast<std::ptrdiff_t>((k + 1) * len));
  };
  NodeTimesBatch b;
  b.n = n;
  for (int i = 0; i < n; ++i) {
    const std::size_t k = static_cast<std::size_t>(i % a.n);
    copy(b.end, a.end, k, ops);
    copy(b.device_free, a.device_free, k, D);
    copy(b.makespan_so_far, a.makespan_so_far, k, 1);
    copy(b.now, a.now, k, 1);
    for (auto [to, from] : {std::pair{&b.level, &a.level}, {&b.offload_start, &a.offload_start},
                            {&b.offload_end, &a.offload_end}, {&b.reload_start, &a.reload_start},
                            {&b.reload_end, &a.reload_end}}) {
      copy(*to, *from, k, sm);
    }
    copy(b.d2h_free, a.d2h_free, k, G);
    copy(b.h2d_free, a.h2d_free, k, G);
  }
  return b;
}

std::unique_ptr<BatchedBounds> make_backend(benchmark::State& state, const std::string& backend) {
  const Pool& p = pool();
  try {
    return backend == "scalar" ? make_scalar_bounds(*p.problem)
           : backend == "tbb"  ? make_tbb_bounds(*p.problem)
                               : make_cuda_bounds(*p.problem);
  } catch (const std::runtime_error& e) {
    state.SkipWithError(e.what());
    return nullptr;
  }
}

void BM_NodeBoundsFromTimes(benchmark::State& state, const std::string& backend) {
  std::unique_ptr<BatchedBounds> bb = make_backend(state, backend);
  if (!bb) return;
  const NodeTimesBatch batch = take_times(static_cast<int>(state.range(0)));
  std::vector<double> bounds;
  for (auto _ : state) {
    bb->compute_bounds(batch, bounds);
    benchmark::DoNotOptimize(bounds.data());
  }
  state.counters["node_bounds/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * batch.n, benchmark::Counter::kIsRate);
  // What one node's state costs to ship (the batch's arrays per node): the bytes a GPU reads.
  const std::size_t doubles = batch.end.size() + batch.device_free.size() + batch.makespan_so_far.size() +
                              batch.now.size() + batch.level.size() + batch.offload_start.size() +
                              batch.offload_end.size() + batch.reload_start.size() + batch.reload_end.size() +
                              batch.d2h_free.size() + batch.h2d_free.size();
  state.counters["state_bytes"] = static_cast<double>(doubles * sizeof(double)) / batch.n;
}

void Batches(benchmark::internal::Benchmark* b) {
  for (int n : {1, 16, 256, 4096, 65536}) b->Arg(n);
  b->ArgName("batch")->Unit(benchmark::kMicrosecond)->UseRealTime();
}

BENCHMARK_CAPTURE(BM_NodeBoundsFromTimes, scalar, std::string("scalar"))->Apply(Batches);
BENCHMARK_CAPTURE(BM_NodeBoundsFromTimes, tbb, std::string("tbb"))->Apply(Batches);
BENCHMARK_CAPTURE(BM_NodeBoundsFromTimes, cuda, std::string("cuda"))->Apply(Batches);

}  // namespace
}  // namespace optpipe

BENCHMARK_MAIN();
