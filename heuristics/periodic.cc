#include "heuristics/periodic.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <sstream>
#include <utility>
#include <vector>

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

// Plans and simulates templates, keeping the best (variants: see periodic.h).
struct TemplateSearch {
  TemplateSearch(const Instance& i, double off, double rel)
      : inst(i), sim(i), offload_ms(off), reload_ms(rel), one_stage_each(!several_stages_on_a_device(i)) {}

  // The simulated makespan of the template for cycle c and `variant` (infinity: none fits).
  double try_variant(double c, int variant) {
    const int variant_id = variant;
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
    if (po.spread > 0 && !one_stage_each) return std::numeric_limits<double>::infinity();
    po.chains_only = plan >= 12;
    po.cycle = c;
    po.offload_margin = margin * offload_ms;
    po.reload_margin = margin * reload_ms;
    // Where every W fits between its B and the next forward anyway, the template is the plain
    // variant's: not simulated twice.
    if (po.w_after_b && same_offsets(periodic_offsets(inst, c, false, po.stagger, true),
                                     periodic_offsets(inst, c, false, po.stagger, false))) {
      return std::numeric_limits<double>::infinity();
    }
    std::optional<Schedule> sch = periodic_schedule(inst, po);
    if (!sch) return std::numeric_limits<double>::infinity();
    ++tried;
    const SimResult r = sim.run(*sch, SimOptions::quiet());
    if (!r.feasible) return std::numeric_limits<double>::infinity();
    results.push_back({r.makespan, c, variant_id});
    if (r.makespan < best_makespan - kTimeEps) {
      best_makespan = r.makespan;
      best = std::move(sch);
      std::ostringstream d;
      d << "cycle " << c << " ms, margin " << margin << (po.book_channels ? ", channels booked" : "")
        << (po.spread > 0 ? ", offloads spread" : "") << (po.chains_only ? ", chains only" : "")
        << (po.stagger ? ", transfers staggered" : "") << (po.w_after_b ? ", W right after B" : "");
      detail = d.str();
    }
    return r.makespan;
  }

  const Instance& inst;
  Simulator sim;
  double offload_ms, reload_ms;
  bool one_stage_each;
  std::optional<Schedule> best;
  double best_makespan = std::numeric_limits<double>::infinity();
  std::string detail;
  int tried = 0;
  struct Tried {
    double makespan, cycle;
    int variant;
  };
  std::vector<Tried> results;  // every template that fit
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
  TemplateSearch search(inst, offload_ms, reload_ms);
  const double growth = std::pow(kCycleSpan, 1.0 / (kCycles - 1));
  // Coarse: every cycle with kCoarseVariants; fine: the kFineCycles best cycles with every other variant.
  std::vector<std::pair<double, double>> by_cycle;  // (best makespan, cycle)
  for (int k = 0; k < kCycles && !limits.expired(); ++k) {
    const double c = c0 * std::pow(growth, k);
    double here = std::numeric_limits<double>::infinity();
    for (int variant : kCoarseVariants) here = std::min(here, search.try_variant(c, variant));
    by_cycle.emplace_back(here, c);
  }
  std::stable_sort(by_cycle.begin(), by_cycle.end());
  for (std::size_t i = 0; i < std::min<std::size_t>(kFineCycles, by_cycle.size()) && !limits.expired(); ++i) {
    for (int variant = 0; variant < kVariants; ++variant) {
      if (std::find(kCoarseVariants.begin(), kCoarseVariants.end(), variant) == kCoarseVariants.end()) {
        search.try_variant(by_cycle[i].second, variant);
      }
    }
  }
  // Refine: the best template of each of the kRefined best variants, at cycles between its
  // cycle's grid neighbours.
  {
    std::vector<TemplateSearch::Tried> top = search.results;
    std::stable_sort(top.begin(), top.end(), [](const auto& a, const auto& b) { return a.makespan < b.makespan; });
    std::vector<int> refined;
    for (const auto& t : top) {
      if (static_cast<int>(refined.size()) >= kRefined) break;
      if (std::find(refined.begin(), refined.end(), t.variant) != refined.end()) continue;
      refined.push_back(t.variant);
      for (int k = -kRefineSteps + 1; k < kRefineSteps && !limits.expired(); ++k) {
        if (k != 0) search.try_variant(t.cycle * std::pow(growth, static_cast<double>(k) / kRefineSteps), t.variant);
      }
    }
  }
  std::optional<Schedule>& best = search.best;
  const std::string& best_detail = search.detail;
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
