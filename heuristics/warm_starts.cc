#include "heuristics/warm_starts.h"

#include <algorithm>
#include <chrono>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include <tbb/parallel_for.h>

#include "model/simulator.h"
#include "model/validator.h"
#include "heuristics/local_search.h"

namespace optpipe {

WarmStarts build_warm_starts(const Instance& inst, const BestResult& heur, const WarmStartOptions& opt) {
  WarmStarts out;
  std::vector<const HeuristicResult*> feasible;
  for (const HeuristicResult& r : heur.results) {
    if (!r.ok()) continue;
    out.schedules.push_back(*r.schedule);
    feasible.push_back(&r);
  }
  constexpr double kEps = kTargetTolerance;  // local_search.h
  for (const HeuristicResult* r : feasible) out.reached_target = out.reached_target || r->sim.makespan <= opt.target + kEps;
  if (opt.evaluations <= 0 || opt.improve_best <= 0 || out.reached_target) return out;
  // The best few with distinct makespans (equal makespans are often the same schedule).
  std::stable_sort(feasible.begin(), feasible.end(),
                   [](const HeuristicResult* a, const HeuristicResult* b) { return a->sim.makespan < b->sim.makespan; });
  std::vector<const HeuristicResult*> picked;
  for (const HeuristicResult* r : feasible) {
    if (static_cast<int>(picked.size()) >= opt.improve_best) break;
    if (!picked.empty() && std::fabs(picked.back()->sim.makespan - r->sim.makespan) <= 1e-9) continue;
    picked.push_back(r);
  }
  // The starts: the guided hybrid first (when there is one), then the picked heuristics.
  struct Start {
    std::string name;
    const Schedule* schedule;
  };
  std::vector<Start> starts;
  Schedule hybrid;
  if (opt.guide_device >= 0 && opt.guide_device < inst.num_devices() && !opt.guide.empty()) {
    SimOptions quiet;
    quiet.record_timeline = false;
    quiet.record_memory = false;
    for (const HeuristicResult* r : feasible) {
      hybrid = *r->schedule;
      hybrid.devices[static_cast<std::size_t>(opt.guide_device)] = opt.guide;
      if (!check_structure(inst, hybrid, 1).empty() || !simulate(inst, hybrid, quiet).feasible) continue;
      hybrid.solver = r->name + " + " + opt.guide_name;
      starts.push_back({hybrid.solver, &hybrid});
      break;
    }
  }
  for (const HeuristicResult* r : picked) starts.push_back({r->name, &*r->schedule});
  std::vector<Schedule> improved(starts.size());
  out.improved.resize(starts.size());
  // A watchdog sets the stop flag at the time limit.
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::thread watchdog;
  if (std::isfinite(opt.time_limit)) {
    watchdog = std::thread([&] {
      std::unique_lock<std::mutex> lock(mu);
      if (!cv.wait_for(lock, std::chrono::duration<double>(std::max(0.0, opt.time_limit)), [&] { return done; })) {
        stop.store(true);
      }
    });
  }
  tbb::parallel_for(std::size_t{0}, starts.size(), [&](std::size_t i) {
    const auto t0 = std::chrono::steady_clock::now();
    LocalSearchOptions lo;
    lo.max_evaluations = opt.evaluations;
    lo.stop = &stop;
    lo.target = opt.target;
    LocalSearchStats st;
    improved[i] = improve_schedule(inst, *starts[i].schedule, lo, &st);
    if (st.final_makespan <= opt.target + kEps) stop.store(true);  // the others cannot do better
    out.improved[i] = {starts[i].name, st.start_makespan, st.final_makespan, st.evaluations,
                       std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
  });
  if (watchdog.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mu);
      done = true;
    }
    cv.notify_all();
    watchdog.join();
  }
  for (const ImprovedStart& i : out.improved) out.reached_target = out.reached_target || i.after <= opt.target + kEps;
  for (Schedule& s : improved) out.schedules.push_back(std::move(s));
  return out;
}

std::int64_t local_search_budget(double seconds) {
  if (!(seconds < 1e9)) return 200000;
  return std::clamp<std::int64_t>(static_cast<std::int64_t>(2000.0 * std::max(0.0, seconds)), 1000, 200000);
}

BoundedWarmStarts build_warm_starts(const Instance& inst, const BestResult& heur, const WarmStartOptions& opt,
                                    const RootBoundFn& bound) {
  constexpr double kEps = kTargetTolerance;
  using Clock = std::chrono::steady_clock;
  const auto started = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - started).count(); };
  BoundedWarmStarts out;
  out.bound = std::max(0.0, opt.target);
  const HeuristicResult* best = heur.best_result();
  auto timed_bound = [&](double incumbent, bool thorough) {
    const auto t0 = Clock::now();
    const GuidedBound b = bound(incumbent, thorough);
    out.bound_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
    out.bound = std::max(out.bound, b.bound);
    return b;
  };
  if (!best || opt.evaluations <= 0 || opt.improve_best <= 0) {
    out.starts = build_warm_starts(inst, heur, opt);
    return out;
  }
  // The quick phase, against the cheap bound.
  timed_bound(best->sim.makespan, false);
  WarmStartOptions quick = opt;
  quick.target = out.bound;
  quick.evaluations = std::min(opt.evaluations, std::max<std::int64_t>(1000, opt.evaluations / 20));
  quick.guide_device = -1;
  out.starts = build_warm_starts(inst, heur, quick);
  out.quick_runs = static_cast<int>(out.starts.improved.size());
  if (out.starts.reached_target) return out;
  // The thorough bound, with the best schedule so far as the cutoff.
  double incumbent = best->sim.makespan;
  for (const ImprovedStart& i : out.starts.improved) incumbent = std::min(incumbent, i.after);
  const GuidedBound thorough = timed_bound(incumbent, true);
  out.thorough = true;
  if (incumbent <= out.bound + kEps) {
    out.starts.reached_target = true;
    return out;
  }
  // The full phase, from the guide first.
  WarmStartOptions full = opt;
  full.target = out.bound;
  full.evaluations = std::max<std::int64_t>(1, opt.evaluations - quick.evaluations);
  full.time_limit = opt.time_limit - elapsed();
  if (thorough.device >= 0 && !thorough.order.empty()) {
    full.guide_device = thorough.device;
    full.guide = thorough.order;
  }
  WarmStarts second = build_warm_starts(inst, heur, full);
  const std::size_t heuristic_schedules = second.schedules.size() - second.improved.size();
  for (std::size_t k = heuristic_schedules; k < second.schedules.size(); ++k) {
    out.starts.schedules.push_back(std::move(second.schedules[k]));
  }
  for (ImprovedStart& i : second.improved) out.starts.improved.push_back(std::move(i));
  out.starts.reached_target = second.reached_target;
  return out;
}

}  // namespace optpipe
