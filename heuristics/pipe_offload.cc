#include "heuristics/pipe_offload.h"

#include <algorithm>
#include <limits>
#include <sstream>

#include "model/simulator.h"
#include "heuristics/base_schedules.h"
#include "heuristics/offload_edit.h"

namespace optpipe {
namespace {

struct Lifespan {
  int device, stage, mb;
  double f_end, b_start;
  double length() const { return b_start - f_end; }
};

// Every offloadable (s,j) with its F end and B start in `sim`.
std::vector<Lifespan> lifespans(const Instance& inst, const Schedule& sch, const SimResult& sim) {
  std::vector<Lifespan> out;
  for (int d = 0; d < inst.num_devices(); ++d) {
    const auto& list = sch.devices[d];
    for (std::size_t k = 0; k < list.size(); ++k) {
      const Action& a = list[k];
      if (a.type != OpType::F || !inst.stages[a.stage].offloadable()) continue;
      const int b = find_action(list, OpType::B, a.stage, a.mb);
      out.push_back({d, a.stage, a.mb, sim.timeline[d][k].end, sim.timeline[d][b].start});
    }
  }
  return out;
}

// One variant: (filter, selective) are PipeOffload's (lifespan at least `filter` round trips;
// the longer half per device, or all), late is every activation that waits at all for its B (not
// the last stage's, used at once) with its reload just before that B.
struct Variant {
  double filter;
  bool selective, late;
};

std::string describe(const Variant& v, const std::string& origin, int offloaded) {
  std::ostringstream out;
  if (v.late) {
    out << "base " << origin << ", full offload of " << offloaded << " activations, each reload just before its B";
  } else {
    out << "base " << origin << ", " << (v.selective ? "selective" : "full") << " offload of " << offloaded
        << " activations with lifespan >= " << v.filter << "x round trip";
  }
  return out.str();
}

// The base with variant v's offloads at `level`; `spans` in decreasing lifespan. Sets *offloaded.
Schedule with_offloads(const Instance& inst, const BaseSchedule& base, const SimResult& timing,
                       const std::vector<Lifespan>& spans, double level, const Variant& v, int* offloaded) {
  Schedule sch = base.schedule;
  auto long_enough = [&](const Lifespan& l) {
    const Stage& st = inst.stages[l.stage];
    return v.late ? l.length() > kTimeEps : l.length() >= v.filter * level * (*st.offload + *st.reload);
  };
  // Per device, the candidates in decreasing lifespan; selective keeps the longer half.
  std::vector<int> taken(inst.num_devices(), 0), eligible(inst.num_devices(), 0);
  for (const Lifespan& l : spans) {
    if (long_enough(l)) ++eligible[l.device];
  }
  *offloaded = 0;
  for (const Lifespan& l : spans) {
    const Stage& st = inst.stages[l.stage];
    if (!long_enough(l)) continue;
    if (v.selective && 2 * taken[l.device] >= eligible[l.device]) continue;
    ++taken[l.device];
    ++*offloaded;
    // The position comes from the base list and its timing (inserting Rs moves no compute
    // action); in the current list, insert before the same action.
    const int pos = v.late ? find_action(base.schedule.devices[l.device], OpType::B, l.stage, l.mb)
                           : latest_hidden_position(base.schedule, timing.timeline[l.device], l.device, l.stage,
                                                    l.mb, level * *st.reload, l.b_start);
    const Action& anchor = base.schedule.devices[l.device][pos];
    const int mapped = find_action(sch.devices[l.device], anchor.type, anchor.stage, anchor.mb);
    set_offload(sch, l.device, l.stage, l.mb, level, mapped);
  }
  return sch;
}

}  // namespace

Built PipeOffload::build(const Instance& inst, const RunLimits& limits) const {
  const double level = inst.offload_levels.back();
  if (level <= 0) return Built::fail("PipeOffload: the instance allows no offload level above 0");
  bool any = false;
  for (const Stage& st : inst.stages) any = any || st.offloadable();
  if (!any) return Built::fail("PipeOffload: no stage of this instance can be offloaded (no offload/reload times)");

  Simulator sim(inst);
  SimOptions free_run;
  free_run.enforce_memory_limit = false;
  free_run.record_memory = false;
  const SimOptions fast = SimOptions::quiet();

  std::optional<Schedule> best;
  double best_makespan = std::numeric_limits<double>::infinity();
  std::string best_detail;
  std::string last_reason = "no memory-oblivious base schedule applies";
  for (const BaseSchedule& base : memory_oblivious_bases(inst)) {
    if (limits.expired()) {
      if (!best) last_reason = "PipeOffload: stopped (time limit or interrupt) before a schedule fit";
      break;
    }
    const SimResult timing = sim.run(base.schedule, free_run);
    std::vector<Lifespan> spans = lifespans(inst, base.schedule, timing);
    std::stable_sort(spans.begin(), spans.end(),
                     [](const Lifespan& a, const Lifespan& b) { return a.length() > b.length(); });
    for (const Variant v : {Variant{1.0, false, false}, Variant{1.0, true, false}, Variant{3.0, false, false},
                            Variant{3.0, true, false}, Variant{0.0, false, true}}) {
      int offloaded = 0;
      Schedule sch = with_offloads(inst, base, timing, spans, level, v, &offloaded);
      if (offloaded == 0) continue;
      const SimResult r = sim.run(sch, fast);
      if (!r.feasible) {
        last_reason = "PipeOffload on " + base.origin + ": " + r.reason;
        continue;
      }
      if (r.makespan < best_makespan - kTimeEps) {
        best_makespan = r.makespan;
        best = std::move(sch);
        best_detail = describe(v, base.origin, offloaded);
      }
    }
  }
  if (!best) return Built::fail(last_reason);
  return Built::ok(std::move(*best), best_detail);
}

}  // namespace optpipe
