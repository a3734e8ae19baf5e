#include "heuristics/periodic.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include "heuristics/periodic_template.h"
#include "model/simulator.h"

namespace optpipe {

namespace {

constexpr int kCycles = 60;
constexpr int kPlainVariants = 48;
constexpr int kVariants = 72;  // and 24 with each W right after its B
// Tried on every cycle: the four plans at a quarter margin, the chains-only one at 0 and 1/4, the
// four plans with staggered transfers, and with each W right after its B the unbooked plan and
// the two spread ones (each the best somewhere: bench-gpt3-28.3b-32x128-2act, 14.6b 16 x 64 8act).
constexpr std::array<int, 13> kCoarseVariants = {1, 4, 7, 10, 12, 13, 25, 28, 31, 34, 48, 55, 58};
constexpr std::size_t kFineCycles = 6;  // cycles tried with every variant
constexpr double kCycleSpan = 3.0;  // the largest cycle tried, in units of the smallest
constexpr int kRefineSteps = 8;     // the refinement's steps per grid step on each side of the best
constexpr int kRefined = 3;         // refined: the best template of each of this many variants

// The smallest cycle: the busiest device's work per microbatch (all its stages').
double smallest_cycle(const Instance& inst) {
  double c = 0;
  for (int d = 0; d < inst.num_devices(); ++d) c = std::max(c, inst.work_per_microbatch(d));
  return c;
}

bool same_offsets(const std::vector<StageOffsets>& a, const std::vector<StageOffsets>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const StageOffsets& x, const StageOffsets& y) { return x.f == y.f && x.b == y.b && x.w == y.w; });
}

// One template: a cycle and a variant (see periodic.h).
struct Candidate {
  double cycle = 0;
  int variant = 0;
};

// What trying a candidate gave: not tried (the limits expired first), no template, or a
// simulated makespan (infinity: it did not fit).
struct Outcome {
  bool tried = false;      // the candidate was looked at
  bool simulated = false;  // it gave a template, which was simulated
  double makespan = std::numeric_limits<double>::infinity();
};

// Plans and simulates candidates, each on its own (so several threads may try them at once),
// and keeps the best in the order the candidates were listed: the result is the same whatever
// the threads and their interleaving (tested against one thread).
struct TemplateSearch {
  TemplateSearch(const Instance& i, const RunLimits& l, double off, double rel)
      : inst(i), limits(l), offload_ms(off), reload_ms(rel), one_stage_each(!several_stages_on_a_device(i)),
        sims([&i] { return Simulator(i); }) {}

  // The plan's options for `cand` and its margin in transfers (nullopt: the variant does not
  // apply here, or gives the same template as another one).
  struct Variant {
    PeriodicPlanOptions po;
    double margin = 0;
  };
  std::optional<Variant> options(const Candidate& cand) const {
    int variant = cand.variant;
    PeriodicPlanOptions po;
    // 48-71: the variants that place B's off the forwards' residues (0-11, 24-35) with each W
    // right after its B.
    if (variant >= kPlainVariants) {
      po.w_after_b = true;
      variant -= kPlainVariants;
      if (variant >= 12) variant += 12;
    }
    const double margin = 0.25 * (variant % 3);
    po.stagger = variant >= 24;
    const int plan = variant % 24;
    po.book_channels = plan / 3 % 4 == 1;
    po.spread = plan / 3 % 4 == 2 ? 1.0 : plan / 3 % 4 == 3 ? 1.15 : 0.0;
    // The spread applies to one stage per device only (periodic_memory_plan.h); elsewhere these
    // variants are the unbooked ones again.
    if (po.spread > 0 && !one_stage_each) return std::nullopt;
    po.chains_only = plan >= 12;
    po.cycle = cand.cycle;
    po.offload_margin = margin * offload_ms;
    po.reload_margin = margin * reload_ms;
    // Where every W fits between its B and the next forward anyway, the template is the plain
    // variant's: not simulated twice.
    if (po.w_after_b && same_offsets(periodic_offsets(inst, cand.cycle, false, po.stagger, true),
                                     periodic_offsets(inst, cand.cycle, false, po.stagger, false))) {
      return std::nullopt;
    }
    return Variant{po, margin};
  }

  static std::string describe(const PeriodicPlanOptions& po, double margin) {
    std::ostringstream d;
    d << "cycle " << po.cycle << " ms, margin " << margin << (po.book_channels ? ", channels booked" : "")
      << (po.spread > 0 ? ", offloads spread" : "") << (po.chains_only ? ", chains only" : "")
      << (po.stagger ? ", transfers staggered" : "") << (po.w_after_b ? ", W right after B" : "");
    return d.str();
  }

  Outcome try_one(const Candidate& cand, Simulator& sim) const {
    Outcome out;
    if (limits.expired()) return out;
    out.tried = true;
    const std::optional<Variant> v = options(cand);
    if (!v) return out;
    const std::optional<Schedule> sch = periodic_schedule(inst, v->po);
    if (!sch) return out;
    out.simulated = true;
    const SimResult r = sim.run(*sch, SimOptions::quiet());
    if (r.feasible) out.makespan = r.makespan;
    return out;
  }

  // Tries `cands` (on every thread of the arena, one simulator per thread), then records their
  // outcomes in the listed order; returns them.
  std::vector<Outcome> try_all(const std::vector<Candidate>& cands) {
    std::vector<Outcome> out(cands.size());
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, cands.size(), 1), [&](const tbb::blocked_range<std::size_t>& r) {
      Simulator& sim = sims.local();
      for (std::size_t i = r.begin(); i != r.end(); ++i) out[i] = try_one(cands[i], sim);
    });
    for (std::size_t i = 0; i < cands.size(); ++i) {
      if (out[i].simulated) ++tried;
      if (!(out[i].makespan < std::numeric_limits<double>::infinity())) continue;
      results.push_back({out[i].makespan, cands[i].cycle, cands[i].variant});
      if (out[i].makespan < best_makespan - kTimeEps) {
        best_makespan = out[i].makespan;
        best = cands[i];
      }
    }
    return out;
  }

  // The best template's schedule, planned again (planning is deterministic), and its description.
  std::optional<Schedule> best_schedule(std::string& detail) const {
    if (!best) return std::nullopt;
    const std::optional<Variant> v = options(*best);
    if (!v) return std::nullopt;
    detail = describe(v->po, v->margin);
    return periodic_schedule(inst, v->po);
  }

  const Instance& inst;
  const RunLimits& limits;
  double offload_ms, reload_ms;
  bool one_stage_each;
  tbb::enumerable_thread_specific<Simulator> sims;  // one per thread, made on its first candidate
  std::optional<Candidate> best;
  double best_makespan = std::numeric_limits<double>::infinity();
  int tried = 0;
  struct Tried {
    double makespan, cycle;
    int variant;
  };
  std::vector<Tried> results;  // every template that fit, in the listed order
};

}  // namespace

Built PeriodicOffload::build(const Instance& inst, const RunLimits& limits) const {
  // Several stages per device without offload: the V and interleaved schedules cover it, and on
  // the small V and loop instances of bench/solvers the template only added 5-14 ms to the solve.
  if (several_stages_on_a_device(inst) && !inst.can_offload()) {
    return Built::fail("Periodic with several stages per device plans offloads, and no stage of this instance can "
                       "offload");
  }
  const double c0 = smallest_cycle(inst);
  if (!(c0 > 0)) return Built::fail("Periodic: the stages have no compute time");
  double offload_ms = 0, reload_ms = 0;
  for (const Stage& st : inst.stages) {
    if (st.offloadable()) offload_ms = std::max(offload_ms, *st.offload), reload_ms = std::max(reload_ms, *st.reload);
  }
  TemplateSearch search(inst, limits, offload_ms, reload_ms);
  const double growth = std::pow(kCycleSpan, 1.0 / (kCycles - 1));
  // Coarse: every cycle with kCoarseVariants; fine: the kFineCycles best cycles with every other variant.
  std::vector<Candidate> coarse;
  for (int k = 0; k < kCycles; ++k) {
    for (int variant : kCoarseVariants) coarse.push_back({c0 * std::pow(growth, k), variant});
  }
  const std::vector<Outcome> coarse_out = search.try_all(coarse);
  std::vector<std::pair<double, double>> by_cycle;  // (best makespan, cycle), of the cycles tried
  for (std::size_t k = 0; k < static_cast<std::size_t>(kCycles); ++k) {
    double here = std::numeric_limits<double>::infinity();
    bool tried = false;
    for (std::size_t v = 0; v < kCoarseVariants.size(); ++v) {
      const Outcome& o = coarse_out[k * kCoarseVariants.size() + v];
      tried = tried || o.tried;
      here = std::min(here, o.makespan);
    }
    if (tried) by_cycle.emplace_back(here, coarse[k * kCoarseVariants.size()].cycle);
  }
  std::stable_sort(by_cycle.begin(), by_cycle.end());
  std::vector<Candidate> fine;
  for (std::size_t i = 0; i < std::min<std::size_t>(kFineCycles, by_cycle.size()); ++i) {
    for (int variant = 0; variant < kVariants; ++variant) {
      if (std::find(kCoarseVariants.begin(), kCoarseVariants.end(), variant) == kCoarseVariants.end()) {
        fine.push_back({by_cycle[i].second, variant});
      }
    }
  }
  search.try_all(fine);
  // Refine: the best template of each of the kRefined best variants, at cycles between its
  // cycle's grid neighbours.
  {
    std::vector<TemplateSearch::Tried> top = search.results;
    std::stable_sort(top.begin(), top.end(), [](const auto& a, const auto& b) { return a.makespan < b.makespan; });
    std::vector<int> refined;
    std::vector<Candidate> between;
    for (const auto& t : top) {
      if (static_cast<int>(refined.size()) >= kRefined) break;
      if (std::find(refined.begin(), refined.end(), t.variant) != refined.end()) continue;
      refined.push_back(t.variant);
      for (int k = -kRefineSteps + 1; k < kRefineSteps; ++k) {
        if (k != 0) between.push_back({t.cycle * std::pow(growth, static_cast<double>(k) / kRefineSteps), t.variant});
      }
    }
    search.try_all(between);
  }
  std::string best_detail;
  std::optional<Schedule> best = search.best_schedule(best_detail);
  const int tried = search.tried;
  if (!best) {
    return Built::fail(limits.expired() ? "Periodic: stopped before a template fit"
                                        : "Periodic: no cycle up to 3x the busiest device's work gives a template that fits");
  }
  std::ostringstream d;
  d << best_detail << " (" << tried << " templates simulated)";
  return Built::ok(std::move(*best), d.str());
}

}  // namespace optpipe
