// Simulator throughput on 1F1B schedules of uniform instances (p stages on p devices, equal
// times), p x m = 4x8, 8x24, 16x64, 32x128, with and without offload, with the timeline and
// memory curves recorded or not. One Simulator object is reused across iterations, as the
// heuristics do. Counters: sims/s (simulations per second) and actions/s (list entries per second).
//
// "With offload": half of device 0's forwards (even microbatches) offload their whole activation
// and reload it from an R placed right before their B (heuristics/offload_edit.h set_offload).
#include <benchmark/benchmark.h>

#include <string>

#include "model/instance.h"
#include "model/schedule.h"
#include "model/simulator.h"
#include "model/validator.h"
#include "heuristics/offload_edit.h"
#include "heuristics/one_f_one_b.h"

namespace optpipe {
namespace {

constexpr double GiB = 1073741824.0;

// p stages on p devices, F = 1, B = 1, W = 1 ms, comm 0.02 ms, 1 GiB activations (0.5 GiB held
// until W), every stage offloadable (0.2 ms each way), 20 GiB static memory, 80 GiB limit.
Instance uniform(int p, int m) {
  Instance inst;
  inst.name = "bench-" + std::to_string(p) + "x" + std::to_string(m);
  inst.microbatches = m;
  inst.comm.assign(static_cast<std::size_t>(p - 1), 0.02);
  for (int d = 0; d < p; ++d) inst.devices.push_back({80 * GiB, 20 * GiB, d});
  for (int s = 0; s < p; ++s) {
    Stage st;
    st.device = s;
    st.forward = st.backward = st.weight = 1.0;
    st.activation = GiB;
    st.weight_activation = GiB / 2;
    st.offload = st.reload = 0.2;
    inst.stages.push_back(st);
  }
  return inst;
}

Schedule one_f_one_b(const Instance& inst, bool offload) {
  Built b = OneFOneB().build(inst);
  Schedule sch = std::move(*b.schedule);
  if (offload) {
    for (int j = 0; j < inst.microbatches; j += 2) {
      const int before_b = find_action(sch.devices[0], OpType::B, 0, j);
      set_offload(sch, 0, 0, j, 1.0, before_b);
    }
  }
  return sch;
}

// Args: p, m, offload (0/1), record timeline and memory (0/1).
void BM_Simulate1F1B(benchmark::State& state) {
  const int p = static_cast<int>(state.range(0)), m = static_cast<int>(state.range(1));
  const bool offload = state.range(2) != 0, record = state.range(3) != 0;
  const Instance inst = uniform(p, m);
  const Schedule sch = one_f_one_b(inst, offload);
  if (!check_structure(inst, sch).empty()) {
    state.SkipWithError("the benchmark's schedule is not well formed");
    return;
  }
  SimOptions opt;
  opt.record_timeline = record;
  opt.record_memory = record;
  Simulator sim(inst);
  const SimResult first = sim.run(sch, opt);
  if (!first.feasible) {
    state.SkipWithError(("the benchmark's schedule deadlocks: " + first.reason).c_str());
    return;
  }
  for (auto _ : state) {
    const SimResult r = sim.run(sch, opt);
    benchmark::DoNotOptimize(r.makespan);  // const: see heuristics_bench.cc
  }
  const double actions = static_cast<double>(sch.num_actions());
  const double iterations = static_cast<double>(state.iterations());
  state.counters["sims/s"] = benchmark::Counter(iterations, benchmark::Counter::kIsRate);
  state.counters["actions/s"] = benchmark::Counter(iterations * actions, benchmark::Counter::kIsRate);
  state.counters["actions"] = actions;
  state.counters["makespan"] = first.makespan;
  state.SetLabel(std::string(offload ? "offload" : "no offload") +
                 (record ? ", recording" : ", no recording"));
}

void Sizes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"p", "m", "offload", "record"});
  for (auto [p, m] : {std::pair{4, 8}, {8, 24}, {16, 64}, {32, 128}}) {
    for (int offload : {0, 1}) {
      for (int record : {0, 1}) b->Args({p, m, offload, record});
    }
  }
}

BENCHMARK(BM_Simulate1F1B)->Apply(Sizes)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace optpipe

BENCHMARK_MAIN();
