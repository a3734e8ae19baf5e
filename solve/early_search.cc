#include "solve/early_search.h"

#include <chrono>
#include <limits>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "heuristics/improve_rounds.h"
#include "heuristics/local_search.h"
#include "heuristics/watchdog.h"
#include "model/simulator.h"

namespace optpipe {

EarlySearch run_heuristics_beside_search(const Instance& inst, const std::function<void(const HeuristicResult&)>& progress,
                                         const RunLimits& limits, double target) {
  EarlySearch out;
  // The heuristics stop at the caller's limits, or once the search has met the target.
  std::atomic<bool> halt{false};
  const Watchdog forward(std::numeric_limits<double>::infinity(), halt, limits.stop);
  RunLimits heuristic_limits = limits;
  heuristic_limits.stop = &halt;
  std::mutex mu;
  std::condition_variable cv;
  std::optional<Schedule> best;  // the best feasible heuristic schedule so far
  double best_makespan = std::numeric_limits<double>::infinity();
  std::atomic<bool> done{false};
  // Stops the search's round: the heuristics are done, or one of them beat what it works on.
  std::atomic<bool> interrupt{false};
  std::atomic<double> working_on{std::numeric_limits<double>::infinity()};
  std::thread heuristics([&] {
    out.heuristics = run_all_heuristics(
        inst, true,
        [&](const HeuristicResult& h) {
          if (progress) progress(h);
          if (!h.ok()) return;
          std::lock_guard<std::mutex> lock(mu);
          if (h.sim.makespan < best_makespan) {
            best_makespan = h.sim.makespan;
            best = *h.schedule;
            if (best_makespan < working_on.load() - kTimeEps) interrupt.store(true);
          }
          cv.notify_all();
        },
        heuristic_limits);
    std::lock_guard<std::mutex> lock(mu);
    done.store(true);
    interrupt.store(true);
    cv.notify_all();
  });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done.load() || best.has_value(); });
  }
  // One round at a time from the best of its own result and the best heuristic so far, until the
  // last heuristic is done.
  const auto t0 = std::chrono::steady_clock::now();
  std::optional<Schedule> current;
  double current_makespan = std::numeric_limits<double>::infinity();
  std::string origin;
  double origin_makespan = 0;  // the heuristic's makespan that `current` descends from
  RoundsOptions ro;
  ro.tasks = 1;
  ro.pool = 1;
  ro.threads = 1;
  // The heuristics stop at the limits and on Ctrl-C, and then so does this; a round also stops
  // when a heuristic's schedule beats the one it improves (at scale a round takes seconds:
  // bench-gpt3-28.3b-32x128-4act's search improved PipeOffload's 2681 ms for 14.8 s while
  // Periodic's 2350 ms waited from 12.7 s on).
  ro.stop = &interrupt;
  ro.max_evaluations = rounds_task_budget(inst);
  ro.target = target;
  while (!done.load()) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (best && best_makespan < current_makespan - kTimeEps) {
        current = best;
        current_makespan = best_makespan;
        origin = best->solver.empty() ? std::string("heuristic") : best->solver;
        origin_makespan = best_makespan;
      }
      working_on.store(current_makespan);
      if (!done.load()) interrupt.store(false);
    }
    if (!current) break;
    ro.seed += 1;
    RoundsStats rs;
    Schedule improved = improve_in_rounds(inst, {*current}, ro, &rs);
    out.evaluations += rs.evaluations;
    if (!improved.devices.empty() && rs.final_makespan < current_makespan - kTimeEps) {
      current = std::move(improved);
      current_makespan = rs.final_makespan;
      current->solver = origin + " + local search beside the heuristics";
      out.improved = current;
      out.from = origin;
      out.before = origin_makespan;
      out.after = current_makespan;
    }
    if (current_makespan <= target + kTargetTolerance) {
      halt.store(true);  // optimal: the slow heuristics have nothing to add
      break;
    }
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  heuristics.join();
  return out;
}

}  // namespace optpipe
