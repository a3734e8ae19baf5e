#include "heuristics/registry.h"

#include <limits>
#include <mutex>
#include <vector>

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
                              const std::function<void(const HeuristicResult&)>& progress, const RunLimits& limits,
                              double bound) {
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
  auto run = [&](const std::vector<std::size_t>& which) {
    if (parallel) {
      tbb::parallel_for(std::size_t{0}, which.size(), [&](std::size_t k) { one(which[k]); });
    } else {
      for (std::size_t i : which) one(i);
    }
  };
  auto pick = [&] {
    best.best = -1;
    for (std::size_t i = 0; i < best.results.size(); ++i) {
      const auto& r = best.results[i];
      if (!r.ok()) continue;
      if (best.best < 0 || r.sim.makespan < best.results[best.best].sim.makespan - kTimeEps) {
        best.best = static_cast<int>(i);
      }
    }
  };
  std::vector<std::size_t> quick, searching;
  for (std::size_t i = 0; i < hs.size(); ++i) {
    (bound > -std::numeric_limits<double>::infinity() && hs[i]->searches() ? searching : quick).push_back(i);
  }
  run(quick);
  pick();
  if (searching.empty()) return best;
  if (const HeuristicResult* b = best.best_result(); b && b->sim.makespan <= bound + kTimeEps) {
    for (std::size_t i : searching) {
      HeuristicResult& r = best.results[i];
      r.name = hs[i]->name();
      r.title = hs[i]->title();
      r.reason = "not run: " + b->title + " meets the lower bound already";
      if (progress) progress(r);
    }
    return best;
  }
  run(searching);
  pick();
  return best;
}

}  // namespace optpipe
