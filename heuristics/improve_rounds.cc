#include "heuristics/improve_rounds.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include "heuristics/local_search.h"
#include "heuristics/watchdog.h"
#include "model/simulator.h"
#include "model/validator.h"

namespace optpipe {

namespace {

struct Entry {
  Schedule schedule;
  double makespan;
};

// Adds e to the pool of at most `size` distinct makespans, best first (ties: the earlier stays).
void add_to_pool(std::vector<Entry>& pool, Entry e, int size) {
  for (const Entry& p : pool) {
    if (std::fabs(p.makespan - e.makespan) <= kTimeEps) return;
  }
  pool.push_back(std::move(e));
  std::stable_sort(pool.begin(), pool.end(), [](const Entry& a, const Entry& b) { return a.makespan < b.makespan; });
  if (static_cast<int>(pool.size()) > size) pool.resize(static_cast<std::size_t>(size));
}

}  // namespace

std::int64_t rounds_task_budget(const Instance& inst) {
  const double actions = static_cast<double>(inst.num_stages()) * inst.microbatches * inst.num_compute_types();
  return std::clamp<std::int64_t>(static_cast<std::int64_t>(12e6 / std::max(1.0, actions)), 500, 20000);
}

Schedule improve_in_rounds(const Instance& inst, const std::vector<Schedule>& starts, const RoundsOptions& opt,
                           RoundsStats* stats) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  RoundsStats local;
  RoundsStats& st = stats ? *stats : local;
  st = RoundsStats{};
  const int size = std::max(1, opt.pool);
  std::vector<Entry> pool;
  for (const Schedule& s : starts) {
    if (s.num_devices() != inst.num_devices() || !check_structure(inst, s, 1).empty()) continue;
    const SimResult r = simulate(inst, s, SimOptions::quiet());
    if (r.feasible) add_to_pool(pool, {s, r.makespan}, size);
  }
  if (pool.empty()) return Schedule{};
  st.start_makespan = st.final_makespan = pool.front().makespan;
  const std::int64_t per_task = opt.evaluations_per_task > 0 ? opt.evaluations_per_task : rounds_task_budget(inst);
  const int tasks = std::max(1, opt.tasks);
  std::atomic<bool> stop{false};
  const Watchdog watchdog(opt.time_limit, stop, opt.stop);
  auto done = [&] {
    return stop.load() || pool.front().makespan <= opt.target + kTargetTolerance ||
           (opt.max_evaluations >= 0 && st.evaluations >= opt.max_evaluations);
  };
  while (!done()) {
    std::vector<Entry> found(static_cast<std::size_t>(tasks), Entry{Schedule{}, 0});
    std::vector<std::int64_t> used(static_cast<std::size_t>(tasks), 0);
    const std::int64_t left = opt.max_evaluations >= 0 ? opt.max_evaluations - st.evaluations : per_task * tasks;
    const std::int64_t budget = std::max<std::int64_t>(1, std::min(per_task, left / tasks));
    tbb::task_arena arena(opt.threads > 0 ? opt.threads : tbb::task_arena::automatic);
    arena.execute([&] { tbb::parallel_for(0, tasks, [&](int t) {
      LocalSearchOptions lo;
      lo.max_evaluations = budget;
      lo.seed = opt.seed + 7919ULL * (static_cast<std::uint64_t>(st.rounds) * tasks + t);
      lo.stop = &stop;
      lo.target = opt.target;
      LocalSearchStats ls;
      found[t].schedule = improve_schedule(inst, pool[static_cast<std::size_t>(t) % pool.size()].schedule, lo, &ls);
      found[t].makespan = ls.final_makespan;
      used[t] = ls.evaluations;
    }); });
    const double before = pool.front().makespan;
    for (int t = 0; t < tasks; ++t) {
      st.evaluations += used[t];
      add_to_pool(pool, std::move(found[t]), size);
    }
    ++st.rounds;
    if (pool.front().makespan < before - kTimeEps) {
      if (opt.on_improve) opt.on_improve(elapsed(), pool.front().makespan);
      if (opt.on_new_best) opt.on_new_best(pool.front().schedule, pool.front().makespan);
    }
  }
  st.final_makespan = pool.front().makespan;
  st.seconds = elapsed();
  return pool.front().schedule;
}

}  // namespace optpipe
