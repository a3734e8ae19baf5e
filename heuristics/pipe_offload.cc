#include "heuristics/pipe_offload.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <sstream>
#include <string>

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

// Every offloadable (s,j) with its F end and B start in `sim`, longest first (ties in list order).
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
  std::stable_sort(out.begin(), out.end(), [](const Lifespan& x, const Lifespan& y) { return x.length() > y.length(); });
  return out;
}

// Which activations a stage with spare memory keeps in the late variant (kept_by_memory): one
// microbatch in every k + wider, starting at microbatch `offset` of each k, and the first
// `first` microbatches.
struct KeepPattern {
  int wider = 0, offset = 1, first = 0;
};

// One variant: (filter, selective) are PipeOffload's (lifespan at least `filter` round trips;
// the longer half per device, or all), late is every activation that waits at all for its B (not
// the last stage's, used at once) with its reload just before that B; late with `spare` keeps,
// on a device of one stage, what its spare memory holds (kept_by_memory) in `pattern`.
struct Variant {
  double filter;
  bool selective, late, spare = false;
  KeepPattern pattern = {};
};

// Per device holding one stage, its spans in microbatch order (empty for the others).
std::vector<std::vector<const Lifespan*>> one_stage_spans(const Instance& inst, const std::vector<Lifespan>& spans) {
  std::vector<std::vector<const Lifespan*>> out(inst.num_devices());
  const auto by_device = inst.stages_by_device();
  for (const Lifespan& l : spans) {
    if (by_device[l.device].size() == 1) out[l.device].push_back(&l);
  }
  for (auto& own : out) {
    std::sort(own.begin(), own.end(), [](const Lifespan* a, const Lifespan* b) { return a->mb < b->mb; });
  }
  return out;
}

// Microbatches of a stage's spans (f_end, b_start) open at span i's F end, of all or of the kept.
int open_at(const std::vector<const Lifespan*>& spans, std::size_t i, const std::vector<char>* kept) {
  int open = 0;
  for (std::size_t i2 = 0; i2 < spans.size(); ++i2) {
    if (kept && !(*kept)[i2]) continue;
    open += spans[i2]->f_end <= spans[i]->f_end + kTimeEps && spans[i2]->b_start > spans[i]->f_end + kTimeEps;
  }
  return open;
}

// Whole activations of stage s that fit beside its device's static memory.
int activation_slots(const Instance& inst, int s) {
  const Stage& st = inst.stages[s];
  const Device& dev = inst.devices[st.device];
  const double room = dev.memory_limit + kMemoryTolerance - dev.static_memory;
  if (st.activation <= 0) return std::numeric_limits<int>::max();
  return room >= st.activation ? static_cast<int>(std::floor(room / st.activation)) : 0;
}

// The spread of a stage's kept activations (below): k = ceil(most open / (c - 1)) with c its
// activation slots; 0 when it keeps all (never more than c open) and -1 when it keeps none
// (c < 2: the one slot is the offloaded ones' passage).
int spread_period(const Instance& inst, const std::vector<const Lifespan*>& spans) {
  if (spans.empty()) return -1;
  const int c = activation_slots(inst, spans.front()->stage);
  int most_open = 0;
  for (std::size_t i = 0; i < spans.size(); ++i) most_open = std::max(most_open, open_at(spans, i, nullptr));
  if (most_open <= c) return 0;
  if (c < 2) return -1;
  return (most_open + c - 2) / (c - 1);
}

// The activations the late variant with `spare` keeps on a device's only stage, given its spans
// in microbatch order: every one when the base never has more than c open at once (c its
// activation slots); otherwise one microbatch in every k + pattern.wider (spread_period: the
// offloads between them share the PCIe channel evenly), at offset pattern.offset, and the
// pattern's first ones, each only while fewer than c - 1 kept ones are open at its F's end (one
// slot stays free for the offloaded ones' passage). Under very tight memory
// (bench-gpt3-14.6b-16x64-1.5act) stage 0 holds 4 activations of the 16 it has in flight:
// offloading all of them queues its transfers before its neighbour's on the shared D2H channel,
// and the neighbour, with room for one activation, waits for each.
// O(n^2) for the n spans of the stage.
std::vector<char> kept_by_memory(const Instance& inst, const std::vector<const Lifespan*>& spans,
                                 const KeepPattern& pattern) {
  const int period = spread_period(inst, spans);
  if (period == 0) return std::vector<char>(spans.size(), 1);
  std::vector<char> keep(spans.size(), 0);
  if (period < 0) return keep;
  const int c = activation_slots(inst, spans.front()->stage);
  const int k = period + pattern.wider;
  for (std::size_t i = 0; i < spans.size(); ++i) {
    const bool chosen = static_cast<int>(i) < pattern.first || static_cast<int>(i) % k == pattern.offset % k;
    keep[i] = chosen && open_at(spans, i, &keep) < c - 1;
  }
  return keep;
}

// The base with `fewer` warm-up forwards fewer on every GPU of one stage whose list is 1F1B's
// shape (w forwards, then B W F repeated, then B W; w >= 2): max(1, w - fewer) forwards, then the
// same alternation. With every activation offloaded, a microbatch fewer in flight per stage is a
// transfer fewer queued on the group's channels during the fill. Null when no list changes.
std::optional<BaseSchedule> shorter_warmup(const Instance& inst, const BaseSchedule& base, int fewer) {
  if (!inst.split_backward) return std::nullopt;
  BaseSchedule out{base.origin + " with " + std::to_string(fewer) + " warm-up forward" + (fewer > 1 ? "s" : "") +
                       " fewer",
                   base.schedule, base.free_makespan};
  const auto by_device = inst.stages_by_device();
  const int m = inst.microbatches;
  bool changed = false;
  for (int d = 0; d < inst.num_devices(); ++d) {
    if (by_device[d].size() != 1) continue;
    const int s = by_device[d].front();
    const auto& list = base.schedule.devices[d];
    // The shape: F0 .. F(w-1), then (B j, W j, F j+w) for j = 0.., then the remaining (B, W).
    auto shaped = [&](int w) {
      std::vector<Action> out_list;
      for (int j = 0; j < w; ++j) out_list.push_back(make_f(s, j));
      for (int j = 0; j < m; ++j) {
        out_list.push_back({OpType::B, s, j, 0.0});
        out_list.push_back({OpType::W, s, j, 0.0});
        if (j + w < m) out_list.push_back(make_f(s, j + w));
      }
      return out_list;
    };
    int w = 0;
    while (w < static_cast<int>(list.size()) && list[w].type == OpType::F) ++w;
    if (w < 2 || w > m) continue;
    const std::vector<Action> now = shaped(w);
    bool same = now.size() == list.size();
    for (std::size_t k = 0; same && k < list.size(); ++k) {
      same = list[k].type == now[k].type && list[k].stage == s && list[k].mb == now[k].mb;
    }
    if (!same) continue;
    out.schedule.devices[d] = shaped(std::max(1, w - fewer));
    changed = true;
  }
  if (!changed) return std::nullopt;
  return out;
}

std::string describe(const Variant& v, const std::string& origin, int offloaded) {
  std::ostringstream out;
  if (v.late) {
    out << "base " << origin << ", " << (v.spare ? "offload of " : "full offload of ") << offloaded << " activations";
    if (v.spare) {
      out << " that spare memory cannot keep (kept: 1 in every k + " << v.pattern.wider << " at offset " << v.pattern.offset
          << ", and the first " << v.pattern.first << ")";
    }
    out << ", each reload just before its B";
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
  // spare: what each device of one stage keeps.
  std::vector<char> kept;  // [stage * m + mb]
  if (v.spare) {
    const int m = inst.microbatches;
    kept.assign(static_cast<std::size_t>(inst.num_stages()) * m, 0);
    for (const auto& own : one_stage_spans(inst, spans)) {
      const std::vector<char> keep = kept_by_memory(inst, own, v.pattern);
      for (std::size_t i = 0; i < own.size(); ++i) kept[own[i]->stage * m + own[i]->mb] = keep[i];
    }
  }
  *offloaded = 0;
  for (const Lifespan& l : spans) {
    const Stage& st = inst.stages[l.stage];
    if (!long_enough(l)) continue;
    if (v.spare && kept[l.stage * inst.microbatches + l.mb]) continue;
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
  // One variant on one base: simulated, kept when best; its makespan (inf when it does not fit).
  auto try_variant = [&](const BaseSchedule& base, const SimResult& timing, const std::vector<Lifespan>& spans,
                         const Variant& v) {
    int offloaded = 0;
    Schedule sch = with_offloads(inst, base, timing, spans, level, v, &offloaded);
    if (offloaded == 0) return std::numeric_limits<double>::infinity();
    const SimResult r = sim.run(sch, fast);
    if (!r.feasible) {
      last_reason = "PipeOffload on " + base.origin + ": " + r.reason;
      return std::numeric_limits<double>::infinity();
    }
    if (r.makespan < best_makespan - kTimeEps) {
      best_makespan = r.makespan;
      best = std::move(sch);
      best_detail = describe(v, base.origin, offloaded);
    }
    return r.makespan;
  };
  // The base where keeping what spare memory holds did best, for the sweep of its patterns.
  struct Spare {
    double makespan = std::numeric_limits<double>::infinity();
    const BaseSchedule* base = nullptr;
    SimResult timing;
    std::vector<Lifespan> spans;
  } spare;
  const std::vector<BaseSchedule> bases = memory_oblivious_bases(inst);
  for (const BaseSchedule& base : bases) {
    if (limits.expired()) {
      if (!best) last_reason = "PipeOffload: stopped (time limit or interrupt) before a schedule fit";
      break;
    }
    SimResult timing = sim.run(base.schedule, free_run);
    std::vector<Lifespan> spans = lifespans(inst, base.schedule, timing);
    for (const Variant v : {Variant{1.0, false, false}, Variant{1.0, true, false}, Variant{3.0, false, false},
                            Variant{3.0, true, false}}) {
      try_variant(base, timing, spans, v);
    }
    const double all = try_variant(base, timing, spans, Variant{0.0, false, true});
    const double kept = try_variant(base, timing, spans, Variant{0.0, false, true, true});
    if (kept < all - kTimeEps && kept < spare.makespan) spare = {kept, &base, std::move(timing), std::move(spans)};
  }
  // Where keeping helped (against the same base with every activation offloaded) and gave the
  // best schedule, the spread of the kept ones decides how the two GPUs of a PCIe group take
  // turns on its channels: try a few (k one or two wider, every offset, the first one or two kept
  // too) on that base.
  // The same on that base with fewer warm-up forwards (shorter_warmup), when it has 1F1B's shape.
  if (spare.base && spare.makespan <= best_makespan + kTimeEps) {
    auto sweep = [&](const BaseSchedule& base, const SimResult& timing, const std::vector<Lifespan>& spans) {
      int period = 0;  // the widest spread on that base
      for (const auto& own : one_stage_spans(inst, spans)) period = std::max(period, spread_period(inst, own));
      for (int wider = 0; period > 0 && wider <= 2; ++wider) {
        for (int first = 0; first <= 2; ++first) {
          for (int offset = 0; offset < period + wider; ++offset) {
            if (limits.expired()) return;
            Variant v{0.0, false, true, true, KeepPattern{wider, offset, first}};
            try_variant(base, timing, spans, v);
          }
        }
      }
    };
    sweep(*spare.base, spare.timing, spare.spans);
    // One warm-up forward fewer, then two, ... while that keeps helping (too few in flight and the
    // pipeline starves).
    for (int fewer = 1; fewer <= 4; ++fewer) {
      const std::optional<BaseSchedule> shorter = shorter_warmup(inst, *spare.base, fewer);
      if (!shorter || limits.expired()) break;
      const SimResult timing = sim.run(shorter->schedule, free_run);
      if (!timing.feasible) break;
      const std::vector<Lifespan> spans = lifespans(inst, shorter->schedule, timing);
      const double before = best_makespan;
      sweep(*shorter, timing, spans);
      if (!(best_makespan < before - kTimeEps)) break;
    }
  }
  if (!best) return Built::fail(last_reason);
  return Built::ok(std::move(*best), best_detail);
}

}  // namespace optpipe
