#include "heuristics/ada_offload.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <tbb/parallel_for.h>

#include "model/bytes.h"
#include "model/simulator.h"
#include "heuristics/base_schedules.h"
#include "heuristics/offload_edit.h"

namespace optpipe {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Violation {
  int device = -1;
  double time = kInf;
  double excess = 0;
};

// The first moment a device's memory curve exceeds its limit (earliest time, then lowest id).
Violation first_violation(const Instance& inst, const SimResult& r) {
  Violation v;
  for (int d = 0; d < inst.num_devices(); ++d) {
    const double limit = inst.devices[d].memory_limit + kMemoryTolerance;
    for (const MemoryPoint& p : r.memory[d]) {
      if (p.bytes > limit) {
        if (p.time < v.time - kTimeEps) v = {d, p.time, p.bytes - inst.devices[d].memory_limit};
        break;
      }
    }
  }
  return v;
}

// Sum over devices of the bytes above the limit at the peak: 0 when everything fits.
double overflow(const Instance& inst, const SimResult& r) {
  double total = 0;
  for (int d = 0; d < inst.num_devices(); ++d) total += std::max(0.0, r.peak_memory[d] - inst.devices[d].memory_limit - kMemoryTolerance);
  return total;
}

// The memory offloading cannot remove, per device, under the base's own timing: static memory,
// an activation while its F or B runs, the part of it above the largest offload level in
// between (all of it for stages that cannot offload), and the weight activation from B's end to
// W's end. When its peak is over the limit, no offload placement fits this order (up to the
// timing shifts that waits cause, which do not change how many Ws are pending).
std::optional<std::string> irreducible_overflow(const Instance& inst, const Schedule& sch, const SimResult& r) {
  const double top = inst.offload_levels.back();
  for (int d = 0; d < inst.num_devices(); ++d) {
    std::vector<std::pair<double, double>> events;  // (time, delta); removals sort first at equal times
    const auto& list = sch.devices[d];
    for (std::size_t k = 0; k < list.size(); ++k) {
      const Action& a = list[k];
      if (a.type != OpType::F) continue;
      const Stage& st = inst.stages[a.stage];
      const int b = find_action(list, OpType::B, a.stage, a.mb);
      const ActionTiming& tf = r.timeline[d][k];
      const ActionTiming& tb = r.timeline[d][b];
      const double kept = st.offloadable() ? (1.0 - top) * st.activation : st.activation;
      events.emplace_back(tf.start, st.activation);
      events.emplace_back(tf.end, kept - st.activation);
      events.emplace_back(tb.start, st.activation - kept);
      events.emplace_back(tb.end, -inst.freed_by_b(a.stage));
      if (inst.split_backward) {
        const int w = find_action(list, OpType::W, a.stage, a.mb);
        events.emplace_back(r.timeline[d][w].end, -inst.freed_by_w(a.stage));
      }
    }
    std::sort(events.begin(), events.end());
    double mem = inst.devices[d].static_memory, peak = mem;
    for (const auto& [t, delta] : events) {
      mem += delta;
      peak = std::max(peak, mem);
    }
    if (peak > inst.devices[d].memory_limit + kMemoryTolerance) {
      return "device " + std::to_string(d) + " needs " + format_bytes(peak) +
             " even with every activation offloaded between its F and B (weight activations waiting for W, "
             "activations in use) > limit " + format_bytes(inst.devices[d].memory_limit);
    }
  }
  return std::nullopt;
}

struct Repaired {
  std::optional<Schedule> schedule;
  double makespan = kInf;
  int offloads = 0;
  std::string reason;
};

class Repairer {
 public:
  Repairer(const Instance& inst, const RunLimits& limits) : inst_(inst), limits_(limits), sim_(inst) {
    free_.enforce_memory_limit = false;
    probe_ = SimOptions::quiet(false);
    fast_ = SimOptions::quiet();
  }

  Repaired run(const BaseSchedule& base) {
    Repaired out;
    Schedule sch = base.schedule;
    if (auto why = cannot_repair(base)) {  // step 1
      out.reason = *why;
      return out;
    }
    std::vector<Offload> offloaded;
    const Fit fit = offload_until_it_fits(base, sch, offloaded);  // steps 2-5
    if (!fit.fits) {
      out.reason = fit.reason;
      return out;
    }
    out.makespan = drop_unneeded_offloads(sch, offloaded, fit.makespan);  // step 6
    out.offloads = count_reloads(sch);
    out.schedule = std::move(sch);
    return out;
  }

 private:
  using Offload = std::tuple<int, int, int, double>;  // device, stage, mb, lifespan
  using Pick = std::tuple<int, int, double, double>;  // stage, mb, new level, lifespan

  // The end of steps 2-5: the makespan with the limits enforced once the schedule fits, or why
  // it cannot.
  struct Fit {
    bool fits = false;
    double makespan = kInf;
    std::string reason;
  };

  // Step 1: why the base is skipped (its order deadlocks, or the memory that offload cannot
  // remove is over the limit in its own timing); nullopt when it can be repaired.
  std::optional<std::string> cannot_repair(const BaseSchedule& base) {
    const SimResult first = sim_.run(base.schedule, free_);
    if (!first.feasible) return "AdaOffload on " + base.origin + ": order deadlocks: " + first.reason;
    if (auto why = irreducible_overflow(inst_, base.schedule, first)) return "AdaOffload on " + base.origin + ": " + *why;
    return std::nullopt;
  }

  // At most one step per level of each offloadable forward, and one more.
  int step_budget() const {
    int budget = 1;
    for (const Stage& st : inst_.stages) budget += st.offloadable() ? inst_.microbatches * static_cast<int>(inst_.offload_levels.size()) : 0;
    return budget;
  }

  // Steps 2-5: offload one activation at a time, each where the first overflow of the run
  // without limits needs it, until the run with the limits enforced completes. Records each
  // offload in `offloaded`.
  Fit offload_until_it_fits(const BaseSchedule& base, Schedule& sch, std::vector<Offload>& offloaded) {
    Fit fit;
    const int budget = step_budget();
    const auto started = std::chrono::steady_clock::now();
    SimResult final_run;
    for (int step = 0; step <= budget; ++step) {
      if (limits_.expired()) {
        fit.reason = "AdaOffload on " + base.origin + ": stopped (time limit or interrupt) after " +
                     std::to_string(offloaded.size()) + " offloads";
        return fit;
      }
      // With the limits enforced, waits for memory may already make the schedule fit.
      final_run = sim_.run(sch, fast_);
      if (final_run.feasible) break;
      const SimResult r = sim_.run(sch, free_);
      if (!r.feasible) {
        fit.reason = "order deadlocks: " + r.reason;
        return fit;
      }
      const Violation v = first_violation(inst_, r);
      if (v.device >= 0 && limits_.deadline != std::chrono::steady_clock::time_point::max()) {
        const auto now = std::chrono::steady_clock::now();
        const double elapsed = std::chrono::duration<double>(now - started).count();
        const double left = std::chrono::duration<double>(limits_.deadline - now).count();
        const double fraction = r.makespan > 0 ? v.time / r.makespan : 1.0;
        if (ada_repair_would_miss(elapsed, fraction, left)) {
          std::ostringstream why;
          why << "AdaOffload on " << base.origin << ": would not finish by the deadline (" << offloaded.size()
              << " offloads in " << elapsed << " s, the first overflow " << 100 * fraction
              << "% into the schedule), stopped early";
          fit.reason = why.str();
          return fit;
        }
      }
      if (v.device >= 0) {
        if (const auto pick = choose(sch, r, r, v)) {
          offload(sch, r, v.device, *pick, offloaded);
          continue;
        }
      }
      // The first overflow is absorbed by waiting; the deadlock is elsewhere.
      if (offload_for_a_stall(sch, r, offloaded)) continue;
      fit.reason = why_stuck(base, v, final_run);
      return fit;
    }
    if (!final_run.feasible) {
      fit.reason = "AdaOffload on " + base.origin + ": no fit after offloading everything it could";
      return fit;
    }
    fit.fits = true;
    fit.makespan = final_run.makespan;
    return fit;
  }

  // Offloads the pick on device d (judged on the free run r) and records it.
  void offload(Schedule& sch, const SimResult& r, int d, const Pick& pick, std::vector<Offload>& offloaded) {
    const auto [s, j, level, lifespan] = pick;
    place_reload(sch, r, d, s, j, level);
    offloaded.emplace_back(d, s, j, lifespan);
  }

  // Targets the memory the enforced run stalls on: offloads for the first memory stall that has
  // a candidate. False when none has.
  bool offload_for_a_stall(Schedule& sch, const SimResult& r, std::vector<Offload>& offloaded) {
    SimOptions with_timeline = fast_;
    with_timeline.record_timeline = true;
    const SimResult stuck = sim_.run(sch, with_timeline);
    for (const Stall& st : stuck.stalls) {
      if (st.kind != Stall::Kind::kForwardMemory && st.kind != Stall::Kind::kReloadMemory) continue;
      if (const auto pick = choose(sch, stuck, r, {st.device, stuck.stop_time, st.needed - st.free})) {
        offload(sch, r, st.device, *pick, offloaded);
        return true;
      }
    }
    return false;
  }

  // Why no offload helps: v, the first overflow of the free run (device -1: none), and the
  // deadlock of the enforced run.
  std::string why_stuck(const BaseSchedule& base, const Violation& v, const SimResult& final_run) const {
    std::ostringstream why;
    why << "AdaOffload on " << base.origin << ": ";
    if (v.device < 0) {
      why << "fits without waiting but deadlocks when waits apply: " << final_run.reason;
    } else {
      why << "device " << v.device << " needs " << format_bytes(v.excess + inst_.devices[v.device].memory_limit)
          << " at t=" << v.time << " ms > limit " << format_bytes(inst_.devices[v.device].memory_limit)
          << " and waiting for memory deadlocks (" << final_run.reason << ")";
    }
    return why.str();
  }

  // Step 6: drops offloads that are not needed, shortest lifespans first, while the schedule
  // stays feasible and no slower. Returns its makespan.
  double drop_unneeded_offloads(Schedule& sch, std::vector<Offload>& offloaded, double makespan) {
    std::sort(offloaded.begin(), offloaded.end(),
              [](const auto& a, const auto& b) { return std::get<3>(a) < std::get<3>(b); });
    for (const auto& [d, s, j, lifespan] : offloaded) {
      (void)lifespan;
      const double level = offload_level(sch, d, s, j);
      if (level <= 0) continue;
      Schedule trial = sch;
      set_offload(trial, d, s, j, 0.0, 0);
      const SimResult t = sim_.run(trial, fast_);
      if (t.feasible && t.makespan <= makespan + kTimeEps) {
        sch = std::move(trial);
        makespan = t.makespan;
      }
    }
    return makespan;
  }

  static int count_reloads(const Schedule& sch) {
    int reloads = 0;
    for (const auto& list : sch.devices) {
      for (const Action& a : list) reloads += a.type == OpType::R ? 1 : 0;
    }
    return reloads;
  }

  // (stage, mb, new level, lifespan) of the activation to offload for violation v: resident on
  // v.device at v.time in the run `at`; lifespans and hiding judged on the free run `free`.
  std::optional<Pick> choose(const Schedule& sch, const SimResult& at, const SimResult& free,
                             const Violation& v) const {
    const auto& list = sch.devices[v.device];
    std::optional<Pick> best_hidden, best_any;
    double hidden_len = -1, any_len = -1;
    for (std::size_t k = 0; k < list.size(); ++k) {
      const Action& a = list[k];
      if (a.type != OpType::F) continue;
      const Stage& st = inst_.stages[a.stage];
      if (!st.offloadable() || a.r >= inst_.offload_levels.back()) continue;
      const int b = find_action(list, OpType::B, a.stage, a.mb);
      const ActionTiming& af = at.timeline[v.device][k];
      const ActionTiming& ab = at.timeline[v.device][b];
      const bool resident = af.start == af.start && af.start <= v.time + kTimeEps && !(ab.done() && ab.end <= v.time + kTimeEps);
      if (!resident) continue;
      const ActionTiming& tf = free.timeline[v.device][k];
      const ActionTiming& tb = free.timeline[v.device][b];
      // Smallest level above the current one that covers the excess, else the largest.
      double level = inst_.offload_levels.back();
      for (double l : inst_.offload_levels) {
        if (l > a.r && (l - a.r) * st.activation >= v.excess) {
          level = l;
          break;
        }
      }
      const double lifespan = tb.start - tf.end;
      const bool hidden = tf.end + level * *st.offload <= v.time + kTimeEps &&
                          tb.start - level * *st.reload >= v.time - kTimeEps;
      if (hidden && lifespan > hidden_len) {
        hidden_len = lifespan;
        best_hidden = std::make_tuple(a.stage, a.mb, level, lifespan);
      }
      if (lifespan > any_len) {
        any_len = lifespan;
        best_any = std::make_tuple(a.stage, a.mb, level, lifespan);
      }
    }
    return best_hidden ? best_hidden : best_any;
  }

  // Offloads (s,j) at `level` and puts its reload where a simulation likes it best.
  void place_reload(Schedule& sch, const SimResult& r, int d, int s, int j, double level) {
    const auto& list = sch.devices[d];
    const int b = find_action(list, OpType::B, s, j);
    const double deadline = r.timeline[d][b].start;
    // Positions computed on the list without this R (reload_range assumes R(s,j) absent).
    Schedule without = sch;
    set_offload(without, d, s, j, level, 0);
    const int existing = find_action(without.devices[d], OpType::R, s, j);
    without.devices[d].erase(without.devices[d].begin() + existing);
    // Timeline indices of `r` refer to `sch`; rebuild a timeline for `without` by dropping R(s,j) if present.
    std::vector<ActionTiming> timing = r.timeline[d];
    const int old_r = find_action(list, OpType::R, s, j);
    if (old_r >= 0) timing.erase(timing.begin() + old_r);
    const auto [lo, hi] = reload_range(without, d, s, j);
    const int latest = latest_hidden_position(without, timing, d, s, j, level * *inst_.stages[s].reload, deadline);
    std::vector<int> positions{latest, latest - 1, lo};
    Schedule best;
    double best_over = kInf, best_ms = kInf;
    for (int pos : positions) {
      if (pos < lo || pos > hi) continue;
      Schedule trial = without;
      trial.devices[d].insert(trial.devices[d].begin() + pos, make_r(s, j));
      const SimResult t = sim_.run(trial, probe_);
      if (!t.feasible) continue;
      const double over = overflow(inst_, t);
      if (over < best_over - 1.0 || (std::fabs(over - best_over) <= 1.0 && t.makespan < best_ms - kTimeEps)) {
        best_over = over;
        best_ms = t.makespan;
        best = std::move(trial);
      }
    }
    if (best.devices.empty()) {
      set_offload(sch, d, s, j, level, latest);
    } else {
      sch = std::move(best);
    }
  }

  const Instance& inst_;
  const RunLimits& limits_;
  Simulator sim_;
  SimOptions free_, probe_, fast_;
};

}  // namespace

Built ada_offload_from(const Instance& inst, const Schedule& base, const std::string& origin) {
  const RunLimits none;
  Repairer repair(inst, none);
  Repaired r = repair.run(BaseSchedule{origin, base, 0.0});
  if (!r.schedule) return Built::fail(r.reason);
  return Built::ok(std::move(*r.schedule), std::to_string(r.offloads) + " offloads");
}

bool ada_repair_would_miss(double elapsed, double fraction, double left) {
  if (!(elapsed >= kAdaGiveUpAfter)) return false;
  if (!(fraction > 0) || fraction >= 1) return false;  // no projection
  return elapsed * (1 - fraction) / fraction > left;
}

Built AdaOffload::build(const Instance& inst, const RunLimits& limits) const {
  const auto bases = memory_oblivious_bases(inst);
  if (bases.empty()) return Built::fail("AdaOffload: no memory-oblivious base schedule applies to this instance");
  // Bases are independent: repair them in parallel, then keep the fastest (ties: the earlier
  // base), so the result does not depend on the thread count.
  std::vector<Repaired> repaired(bases.size());
  tbb::parallel_for(std::size_t{0}, bases.size(), [&](std::size_t i) {
    Repairer repair(inst, limits);
    repaired[i] = repair.run(bases[i]);
  });
  Repaired best;
  std::string origin;
  std::string last_reason;
  for (std::size_t i = 0; i < bases.size(); ++i) {
    Repaired& r = repaired[i];
    if (!r.schedule) {
      last_reason = r.reason;
      continue;
    }
    if (r.makespan < best.makespan - kTimeEps) {
      best = std::move(r);
      origin = bases[i].origin;
    }
  }
  if (!best.schedule) {
    if (!inst.can_offload()) return Built::fail("AdaOffload: no stage of this instance can be offloaded and no base schedule fits");
    return Built::fail(last_reason);
  }
  std::ostringstream detail;
  detail << "base " << origin << ", " << best.offloads << " offloads";
  return Built::ok(std::move(*best.schedule), detail.str());
}

}  // namespace optpipe
