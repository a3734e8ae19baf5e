#include "heuristics/warm_starts.h"

#include <algorithm>
#include <chrono>
#include <atomic>
#include <cmath>
#include <string>

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>
#include <tbb/task_group.h>

#include "model/simulator.h"
#include "model/validator.h"
#include "heuristics/improve_rounds.h"
#include "heuristics/local_search.h"
#include "heuristics/watchdog.h"

namespace optpipe {

namespace {

constexpr double kEps = kTargetTolerance;  // local_search.h

// What one local search run starts from, and what it is called.
struct Start {
  std::string name;
  const Schedule* schedule;
};

// The first `n` of `feasible` (sorted by makespan) with distinct makespans: equal makespans are
// often the same schedule.
std::vector<const HeuristicResult*> best_distinct(const std::vector<const HeuristicResult*>& feasible, int n) {
  std::vector<const HeuristicResult*> picked;
  for (const HeuristicResult* r : feasible) {
    if (static_cast<int>(picked.size()) >= n) break;
    if (!picked.empty() && std::fabs(picked.back()->sim.makespan - r->sim.makespan) <= 1e-9) continue;
    picked.push_back(r);
  }
  return picked;
}

// Puts into `hybrid` the first of `feasible` (best first) that is still valid and feasible with
// opt.guide in place of its guide device's list, named "<heuristic> + <guide_name>". False when
// there is no guide or no such hybrid.
bool guided_hybrid(const Instance& inst, const std::vector<const HeuristicResult*>& feasible,
                   const WarmStartOptions& opt, Schedule& hybrid) {
  if (opt.guide_device < 0 || opt.guide_device >= inst.num_devices() || opt.guide.empty()) return false;
  const SimOptions quiet = SimOptions::quiet();
  for (const HeuristicResult* r : feasible) {
    hybrid = *r->schedule;
    hybrid.devices[static_cast<std::size_t>(opt.guide_device)] = opt.guide;
    if (!check_structure(inst, hybrid, 1).empty() || !simulate(inst, hybrid, quiet).feasible) continue;
    hybrid.solver = r->name + " + " + opt.guide_name;
    return true;
  }
  return false;
}

// Local search from every start, one task each (TBB), on opt.evaluations each; all stop at
// opt.time_limit, or as soon as one reaches opt.target (or `live_target`, a bound proven
// meanwhile; null: none). `done` (null: a flag of its own) is the stop flag they share: set from
// outside, it stops them; a run that reaches the target sets it. Returns the improved schedules
// and puts one ImprovedStart per start into `runs`, both in the order of `starts`.
std::vector<Schedule> improve_all(const Instance& inst, const std::vector<Start>& starts, const WarmStartOptions& opt,
                                  std::vector<ImprovedStart>& runs, std::atomic<bool>* done = nullptr,
                                  const std::atomic<double>* live_target = nullptr) {
  std::vector<Schedule> improved(starts.size());
  runs.resize(starts.size());
  std::atomic<bool> own{false};
  std::atomic<bool>& stop = done ? *done : own;
  const Watchdog watchdog(opt.time_limit, stop, opt.stop);
  tbb::parallel_for(std::size_t{0}, starts.size(), [&](std::size_t i) {
    const auto t0 = std::chrono::steady_clock::now();
    LocalSearchOptions lo;
    lo.max_evaluations = opt.evaluations;
    lo.stall_evaluations = opt.stall_evaluations;
    lo.stop = &stop;
    lo.target = opt.target;
    lo.live_target = live_target;
    LocalSearchStats st;
    improved[i] = improve_schedule(inst, *starts[i].schedule, lo, &st);
    if (st.final_makespan <= current_target(lo) + kEps) stop.store(true);  // the others cannot do better
    if (opt.on_improved) opt.on_improved(st.final_makespan, starts[i].name);
    runs[i] = {starts[i].name, st.start_makespan, st.final_makespan, st.evaluations,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
  });
  return improved;
}

// Sorted by makespan, best first: the feasible heuristic results.
std::vector<const HeuristicResult*> feasible_by_makespan(const BestResult& heur) {
  std::vector<const HeuristicResult*> feasible;
  for (const HeuristicResult& r : heur.results) {
    if (r.ok()) feasible.push_back(&r);
  }
  std::stable_sort(feasible.begin(), feasible.end(),
                   [](const HeuristicResult* a, const HeuristicResult* b) { return a->sim.makespan < b->sim.makespan; });
  return feasible;
}

// The full phase as rounds (WarmStartOptions::rounds): from the guide's hybrid and every schedule
// so far, best first; one ImprovedStart for all of it.
void full_phase_in_rounds(const Instance& inst, const BestResult& heur, const WarmStartOptions& opt,
                          const GuidedBound& thorough, double seconds, BoundedWarmStarts& out) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<Schedule> starts;
  const std::vector<const HeuristicResult*> feasible = feasible_by_makespan(heur);
  WarmStartOptions guided = opt;
  guided.guide_device = thorough.device;
  guided.guide = thorough.order;
  Schedule hybrid;
  if (thorough.device >= 0 && guided_hybrid(inst, feasible, guided, hybrid)) starts.push_back(hybrid);
  starts.insert(starts.end(), out.starts.schedules.begin(), out.starts.schedules.end());
  RoundsOptions ro;
  ro.time_limit = seconds;
  ro.target = out.bound;
  ro.stop = opt.stop;
  ro.max_evaluations = opt.round_evaluations;
  ro.threads = opt.threads;
  if (opt.on_improved) ro.on_improve = [&](double, double makespan) { opt.on_improved(makespan, "rounds"); };
  RoundsStats rs;
  Schedule best = improve_in_rounds(inst, starts, ro, &rs);
  if (best.devices.empty()) return;
  best.solver = "local search in rounds";
  out.starts.improved.push_back({"the best so far, " + std::to_string(rs.rounds) + " rounds of " + std::to_string(ro.tasks) + " searches", rs.start_makespan,
                                 rs.final_makespan, rs.evaluations,
                                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()});
  out.starts.reached_target = out.starts.reached_target || rs.final_makespan <= out.bound + kEps;
  out.starts.schedules.push_back(std::move(best));
}

// The full phase's options: the rest of the budget per start after the quick phase's, aimed at
// `bound`, within what the time limit leaves after `spent` seconds.
WarmStartOptions full_phase_options(const WarmStartOptions& opt, std::int64_t quick_evaluations, double bound,
                                    double spent) {
  WarmStartOptions full = opt;
  full.target = bound;
  full.evaluations = std::max<std::int64_t>(1, opt.evaluations - quick_evaluations);
  full.time_limit = opt.time_limit - spent;
  return full;
}

// The full phase beside the thorough bound (build_warm_starts with two threads or more, see the
// header). One task computes the bound (stopped through `done` once it cannot matter) and then
// searches from its guide; meanwhile the searches from the best heuristics run, with the bound
// as their live target once it is known. `timed_bound` is build_warm_starts' own (it raises
// out.bound); `spent` the seconds used before.
template <class TimedBound>
void full_phase_beside_bound(const Instance& inst, const BestResult& heur, const WarmStartOptions& opt,
                             std::int64_t quick_evaluations, double incumbent, TimedBound& timed_bound, double spent,
                             BoundedWarmStarts& out) {
  const WarmStartOptions full = full_phase_options(opt, quick_evaluations, out.bound, spent);
  const std::vector<const HeuristicResult*> feasible = feasible_by_makespan(heur);
  std::atomic<bool> done{false};
  std::atomic<double> proven{out.bound};
  const Watchdog watchdog(full.time_limit, done, opt.stop);

  std::vector<ImprovedStart> guided_run;
  std::vector<Schedule> guided;
  tbb::task_group side;
  side.run([&] {
    const GuidedBound thorough = timed_bound(incumbent, true, &done);
    if (thorough.bound > proven.load()) proven.store(thorough.bound);
    if (thorough.bound >= incumbent - kEps) done.store(true);  // the quick phase's best is optimal
    if (done.load() || thorough.device < 0 || thorough.order.empty()) return;
    WarmStartOptions g = full;
    g.target = proven.load();
    g.guide_device = thorough.device;
    g.guide = thorough.order;
    Schedule hybrid;
    if (!guided_hybrid(inst, feasible, g, hybrid)) return;
    guided = improve_all(inst, {{hybrid.solver, &hybrid}}, g, guided_run, &done, &proven);
  });
  std::vector<Start> starts;
  for (const HeuristicResult* r : best_distinct(feasible, opt.improve_best)) starts.push_back({r->name, &*r->schedule});
  std::vector<ImprovedStart> runs;
  std::vector<Schedule> improved;
  try {
    improved = improve_all(inst, starts, full, runs, &done, &proven);
  } catch (...) {  // the bound's task reads this frame: stop it and wait before leaving
    done.store(true);
    side.wait();
    throw;
  }
  side.wait();
  out.thorough = true;
  // The guide's run first, as in the phases one after the other.
  for (Schedule& g : guided) out.starts.schedules.push_back(std::move(g));
  for (ImprovedStart& r : guided_run) out.starts.improved.push_back(std::move(r));
  for (Schedule& i : improved) out.starts.schedules.push_back(std::move(i));
  for (ImprovedStart& r : runs) out.starts.improved.push_back(std::move(r));
  bool reached = incumbent <= out.bound + kEps;
  for (const ImprovedStart& r : out.starts.improved) reached = reached || r.after <= out.bound + kEps;
  out.starts.reached_target = reached;
}

}  // namespace

WarmStarts build_warm_starts(const Instance& inst, const BestResult& heur, const WarmStartOptions& opt) {
  WarmStarts out;
  for (const HeuristicResult& r : heur.results) {
    if (r.ok()) out.schedules.push_back(*r.schedule);
  }
  const std::vector<const HeuristicResult*> feasible = feasible_by_makespan(heur);
  for (const HeuristicResult* r : feasible) out.reached_target = out.reached_target || r->sim.makespan <= opt.target + kEps;
  if (opt.evaluations <= 0 || opt.improve_best <= 0 || out.reached_target) return out;
  // The starts: the guided hybrid first (when there is one), then the best few heuristics.
  std::vector<Start> starts;
  Schedule hybrid;
  if (guided_hybrid(inst, feasible, opt, hybrid)) starts.push_back({hybrid.solver, &hybrid});
  for (const HeuristicResult* r : best_distinct(feasible, opt.improve_best)) starts.push_back({r->name, &*r->schedule});
  std::vector<Schedule> improved = improve_all(inst, starts, opt, out.improved);
  for (const ImprovedStart& i : out.improved) out.reached_target = out.reached_target || i.after <= opt.target + kEps;
  for (Schedule& s : improved) out.schedules.push_back(std::move(s));
  return out;
}

std::int64_t local_search_budget(double seconds) {
  if (!(seconds < 1e9)) return 200000;
  return std::clamp<std::int64_t>(static_cast<std::int64_t>(2000.0 * std::max(0.0, seconds)), 1000, 200000);
}

BoundedWarmStarts build_warm_starts(const Instance& inst, const BestResult& heur, const WarmStartOptions& opt,
                                    const RootBoundFn& bound, const BetweenPhasesFn& between_phases,
                                    const BriefBoundFn& brief) {
  using Clock = std::chrono::steady_clock;
  const auto started = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - started).count(); };
  BoundedWarmStarts out;
  out.bound = std::max(0.0, opt.target);
  const HeuristicResult* best = heur.best_result();
  auto account = [&](const GuidedBound& b, Clock::time_point t0) {
    out.bound_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
    out.bound = std::max(out.bound, b.bound);
    out.relaxation = out.relaxation || b.relaxation;
    return b;
  };
  auto timed_bound = [&](double incumbent, bool thorough, const std::atomic<bool>* stop) {
    const auto t0 = Clock::now();
    return account(bound(incumbent, thorough, stop), t0);
  };
  if (!best || opt.evaluations <= 0 || opt.improve_best <= 0) {
    out.starts = build_warm_starts(inst, heur, opt);
    return out;
  }
  // The quick phase, against the cheap bound.
  double first = best->sim.makespan;
  for (const ImprovedStart& r : opt.extra_runs) first = std::min(first, r.after);
  std::atomic<bool> no_stop{false};
  const std::atomic<bool>* const stop = opt.stop ? opt.stop : &no_stop;  // the bounds': the caller's, or none
  const GuidedBound cheap = timed_bound(first, false, stop);
  if (brief && out.bound < first - kEps) {
    const auto t0 = Clock::now();
    account(brief(first, stop), t0);
  }
  WarmStartOptions quick = opt;
  quick.target = out.bound;
  quick.evaluations = std::min(opt.evaluations, opt.quick_evaluations >= 0
                                                    ? opt.quick_evaluations
                                                    : std::max<std::int64_t>(1000, opt.evaluations / 20));
  // The cheap bound's guide, when it has one (the device relaxation's order: the quick local
  // search from the best heuristic with that device's list in it finds small-v-04's optimum).
  quick.guide_device = cheap.order.empty() ? -1 : cheap.device;
  if (opt.quick_improve_best >= 0) quick.improve_best = opt.quick_improve_best;
  quick.stall_evaluations = opt.quick_stall_evaluations;
  quick.guide = cheap.order;
  // The caller's schedules (the early search's) join, first among the improved runs; when one
  // meets the cheap bound there is no quick phase.
  bool extra_reached = false;
  for (const ImprovedStart& r : opt.extra_runs) extra_reached = extra_reached || r.after <= out.bound + kEps;
  if (extra_reached) quick.evaluations = 0;
  out.starts = build_warm_starts(inst, heur, quick);
  out.starts.schedules.insert(out.starts.schedules.end(), opt.extra.begin(), opt.extra.end());
  out.starts.improved.insert(out.starts.improved.begin(), opt.extra_runs.begin(), opt.extra_runs.end());
  out.starts.reached_target = out.starts.reached_target || extra_reached;
  out.quick_runs = static_cast<int>(out.starts.improved.size());
  if (out.starts.reached_target) return out;
  if (between_phases && between_phases(out.starts)) {
    out.ended_by_caller = true;
    return out;
  }
  // The thorough bound, with the best schedule so far as the cutoff.
  double incumbent = best->sim.makespan;
  for (const ImprovedStart& i : out.starts.improved) incumbent = std::min(incumbent, i.after);
  if (!opt.rounds && tbb::this_task_arena::max_concurrency() >= 2) {
    full_phase_beside_bound(inst, heur, opt, quick.evaluations, incumbent, timed_bound, elapsed(), out);
    return out;
  }
  const GuidedBound thorough = timed_bound(incumbent, true, stop);
  out.thorough = true;
  if (incumbent <= out.bound + kEps) {
    out.starts.reached_target = true;
    return out;
  }
  // The full phase, from the guide first.
  if (opt.rounds) {
    full_phase_in_rounds(inst, heur, opt, thorough, opt.time_limit - elapsed(), out);
    return out;
  }
  WarmStartOptions full = full_phase_options(opt, quick.evaluations, out.bound, elapsed());
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
