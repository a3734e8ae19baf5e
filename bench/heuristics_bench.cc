// run_heuristic() times for 1F1B, ZB greedy, PipeOffload and AdaOffload on uniform instances of
// p x m = 8x24 and 16x64 with tight memory: limit = static + 0.6·p activations (1F1B needs p on
// device 0, so it fails with a reason and only its build + shortfall analysis is timed), every
// stage offloadable. Counters: makespan (0 when no schedule), offloads (R actions in the result).
// BM_LocalSearch: local search (10k simulations) from ZB greedy's schedule on the same instances;
// counters: start and final makespan. BM_LocalSearchCheckpoints: plain against checkpointed
// simulations (LocalSearchOptions::checkpoints) on 4 x 8, 4 x 16 and 8 x 24.
#include <benchmark/benchmark.h>

#include <string>
#include <utility>

#include "model/instance.h"
#include "heuristics/heuristic.h"
#include "heuristics/local_search.h"
#include "heuristics/registry.h"

namespace optpipe {
namespace {

constexpr double GiB = 1073741824.0;

// F = 1, B = 1.2, W = 0.8 ms, comm 0.02 ms; 2 GiB activations (0.8 GiB held until W); offload
// and reload 0.3 ms each; 20 GiB static memory; limit static + 0.6·p activations.
Instance tight(int p, int m) {
  Instance inst;
  inst.name = "tight-" + std::to_string(p) + "x" + std::to_string(m);
  inst.microbatches = m;
  inst.comm.assign(static_cast<std::size_t>(p - 1), 0.02);
  const double act = 2 * GiB, stat = 20 * GiB;
  for (int d = 0; d < p; ++d) inst.devices.push_back({stat + 0.6 * p * act, stat, d});
  for (int s = 0; s < p; ++s) {
    Stage st;
    st.device = s;
    st.forward = 1.0;
    st.backward = 1.2;
    st.weight = 0.8;
    st.activation = act;
    st.weight_activation = 0.4 * act;
    st.offload = st.reload = 0.3;
    inst.stages.push_back(st);
  }
  return inst;
}

void BM_RunHeuristic(benchmark::State& state, const std::string& name) {
  const Heuristic* h = find_heuristic(name);
  if (h == nullptr) {
    state.SkipWithError(("no heuristic " + name).c_str());
    return;
  }
  const int p = static_cast<int>(state.range(0)), m = static_cast<int>(state.range(1));
  const Instance inst = tight(p, m);
  HeuristicResult last;
  for (auto _ : state) {
    last = run_heuristic(*h, inst);
    // The const overload: Google Benchmark 1.7's non-const DoNotOptimize ("+m,r") lets GCC -O3
    // treat the double as rewritten through a general register, which corrupted it here.
    benchmark::DoNotOptimize(std::as_const(last.sim.makespan));
  }
  int offloads = 0;
  if (last.ok()) {
    for (const auto& list : last.schedule->devices) {
      for (const Action& a : list) offloads += a.type == OpType::R ? 1 : 0;
    }
  }
  state.counters["makespan"] = last.ok() ? last.sim.makespan : 0.0;
  state.counters["offloads"] = offloads;
  std::string label = last.ok() ? last.detail : "no schedule: " + last.reason;
  if (label.size() > 90) label = label.substr(0, 87) + "...";
  state.SetLabel(label);
}

void Sizes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"p", "m"});
  b->Args({8, 24});
  b->Args({16, 64});
  b->Unit(benchmark::kMillisecond);
}

BENCHMARK_CAPTURE(BM_RunHeuristic, 1f1b, std::string("1f1b"))->Apply(Sizes);
BENCHMARK_CAPTURE(BM_RunHeuristic, zb_greedy, std::string("zb-greedy"))->Apply(Sizes);
BENCHMARK_CAPTURE(BM_RunHeuristic, pipe_offload, std::string("pipe-offload"))->Apply(Sizes);
BENCHMARK_CAPTURE(BM_RunHeuristic, ada_offload, std::string("ada-offload"))->Apply(Sizes);

// Local search from ZB greedy's schedule on tight(p, m) with `evaluations` simulations and
// `checkpoints` (LocalSearchOptions::checkpoints). Counters: start and final makespan, and the
// seconds per simulation (per_sim, shown with an SI prefix, e.g. 12.5us).
void local_search_from_zb_greedy(benchmark::State& state, std::int64_t evaluations, int checkpoints) {
  const int p = static_cast<int>(state.range(0)), m = static_cast<int>(state.range(1));
  const Instance inst = tight(p, m);
  const HeuristicResult start = run_heuristic(*find_heuristic("zb-greedy"), inst);
  if (!start.ok()) {
    state.SkipWithError("zb-greedy found no schedule");
    return;
  }
  LocalSearchOptions lo;
  lo.max_evaluations = evaluations;
  lo.checkpoints = checkpoints;
  LocalSearchStats st;
  std::int64_t sims = 0;
  for (auto _ : state) {
    const Schedule s = improve_schedule(inst, *start.schedule, lo, &st);
    benchmark::DoNotOptimize(s.devices.data());
    sims += st.evaluations;
  }
  state.counters["start"] = st.start_makespan;
  state.counters["makespan"] = st.final_makespan;
  state.counters["per_sim"] =
      benchmark::Counter(static_cast<double>(sims), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_LocalSearch(benchmark::State& state) { local_search_from_zb_greedy(state, 10000, -1); }
BENCHMARK(BM_LocalSearch)->Apply(Sizes)->Iterations(1);

// The same search (5k simulations) with plain simulations (checkpoints 0) and with the default
// (default_checkpoints: 8 from 64 compute ops, 16 from 1024); the same schedules, the time a
// simulation differs.
void BM_LocalSearchCheckpoints(benchmark::State& state) {
  local_search_from_zb_greedy(state, 5000, static_cast<int>(state.range(2)));
}
BENCHMARK(BM_LocalSearchCheckpoints)
    ->ArgNames({"p", "m", "checkpoints"})
    ->ArgsProduct({{4}, {8, 16}, {0, -1}})
    ->ArgsProduct({{8}, {24}, {0, -1}})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace optpipe

BENCHMARK_MAIN();
