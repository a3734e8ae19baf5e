#include "heuristics/registry.h"

#include <mutex>

#include <tbb/parallel_for.h>

#include "heuristics/ada_offload.h"
#include "heuristics/gpipe.h"
#include "heuristics/interleaved_1f1b.h"
#include "heuristics/one_f_one_b.h"
#include "heuristics/periodic.h"
#include "heuristics/pipe_offload.h"
#include "heuristics/v_shape.h"
#include "heuristics/waves.h"
#include "heuristics/zb_greedy.h"
#include "heuristics/zb_handcrafted.h"
#include "heuristics/zb_v.h"

namespace optpipe {

const std::vector<std::unique_ptr<Heuristic>>& all_heuristics() {
  static const std::vector<std::unique_ptr<Heuristic>> list = [] {
    std::vector<std::unique_ptr<Heuristic>> v;
    v.push_back(std::make_unique<GPipe>());
    v.push_back(std::make_unique<OneFOneB>());
    v.push_back(std::make_unique<ZbH1>());
    v.push_back(std::make_unique<ZbH2>());
    v.push_back(std::make_unique<ZbGreedy>());
    v.push_back(std::make_unique<Interleaved1F1B>());
    v.push_back(std::make_unique<ZbV>());
    v.push_back(std::make_unique<VMin>());
    v.push_back(std::make_unique<VHalf>());
    v.push_back(std::make_unique<VZb>());
    v.push_back(std::make_unique<PipeOffload>());
    v.push_back(std::make_unique<AdaOffload>());
    v.push_back(std::make_unique<Waves>());
    v.push_back(std::make_unique<PeriodicOffload>());
    return v;
  }();
  return list;
}

const Heuristic* find_heuristic(const std::string& name) {
  for (const auto& h : all_heuristics()) {
    if (h->name() == name) return h.get();
  }
  return nullptr;
}

std::string heuristic_names() {
  std::string out;
  for (const auto& h : all_heuristics()) out += (out.empty() ? "" : ", ") + h->name();
  return out;
}

BestResult run_all_heuristics(const Instance& instance, bool parallel,
                              const std::function<void(const HeuristicResult&)>& progress, const RunLimits& limits) {
  const auto& hs = all_heuristics();
  BestResult best;
  best.results.resize(hs.size());
  std::mutex mu;
  auto one = [&](std::size_t i) {
    best.results[i] = run_heuristic(*hs[i], instance, limits);
    if (progress) {
      std::lock_guard<std::mutex> lock(mu);
      progress(best.results[i]);
    }
  };
  if (parallel) {
    tbb::parallel_for(std::size_t{0}, hs.size(), one);
  } else {
    for (std::size_t i = 0; i < hs.size(); ++i) one(i);
  }
  for (std::size_t i = 0; i < best.results.size(); ++i) {
    const auto& r = best.results[i];
    if (!r.ok()) continue;
    if (best.best < 0 || r.sim.makespan < best.results[best.best].sim.makespan - kTimeEps) {
      best.best = static_cast<int>(i);
    }
  }
  return best;
}

}  // namespace optpipe
