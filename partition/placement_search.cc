#include "partition/placement_search.h"

#include <chrono>
#include <cmath>
#include <cstdio>

#include "instances/generator/generate.h"
#include "model/error.h"

namespace optpipe::partition {

namespace {

using Clock = std::chrono::steady_clock;

// The run's best split when it was solved to a schedule.
const Trial* best_of(const PlacementRun& run) {
  const Trial* t = run.result ? run.result->best_trial() : nullptr;
  return t && t->solved && std::isfinite(t->makespan) ? t : nullptr;
}

}  // namespace

const Trial* PlacementsResult::best_trial() const {
  return best >= 0 ? best_of(runs[static_cast<std::size_t>(best)]) : nullptr;
}

const Trial* PlacementsResult::reference() const {
  return runs.empty() || !runs.front().result ? nullptr : runs.front().result->baseline();
}

PlacementsResult partition_placements(const std::vector<Placement>& placements, const PlacementModelFn& make,
                                      const PartitionOptions& options) {
  const auto t0 = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  auto say = [&](const std::string& line) {
    if (options.progress) options.progress(line);
  };
  PlacementsResult out;
  std::optional<double> limit;  // bytes, from the first placement's model
  std::string first_no_fit;
  for (std::size_t k = 0; k < placements.size(); ++k) {
    PlacementRun run;
    run.placement = placements[k];
    const std::string word = gen::placement_word(run.placement);
    if (options.stop && options.stop->load()) {
      run.note = "not searched: stopped";
      out.runs.push_back(std::move(run));
      continue;
    }
    try {
      run.model = make(run.placement, limit);
    } catch (const InputError& e) {
      if (k == 0) throw;  // the reference placement must apply
      // Without the advice to use fewer devices: here the other placements are the answer.
      const auto* few = dynamic_cast<const TooFewLayers*>(&e);
      run.note = "does not apply: " + (few ? few->fact() : std::string(e.what()));
      say("placement " + word + ": " + run.note);
      out.runs.push_back(std::move(run));
      continue;
    }
    if (!limit) limit = run.model->memory_limit();
    PartitionOptions o = options;
    run.seconds = std::max(0.0, (options.time_limit - elapsed()) / static_cast<double>(placements.size() - k));
    o.time_limit = run.seconds;
    if (options.progress) o.progress = [&, word](const std::string& line) { options.progress(word + ": " + line); };
    char secs[32];
    std::snprintf(secs, sizeof secs, "%.1f s", run.seconds);
    say("placement " + word + ": searching its splits for up to " + secs);
    try {
      run.result = partition_search(*run.model, o);
    } catch (const NoSplitFits& e) {
      run.note = std::string("no split fits: ") + e.what();
      if (first_no_fit.empty()) first_no_fit = e.what();
      say("placement " + word + ": " + run.note);
    }
    out.runs.push_back(std::move(run));
  }
  for (std::size_t k = 0; k < out.runs.size(); ++k) {
    const Trial* t = best_of(out.runs[k]);
    const Trial* b = out.best_trial();
    if (t && (!b || t->makespan < b->makespan)) out.best = static_cast<int>(k);
  }
  bool any_fit = false;
  for (const PlacementRun& r : out.runs) any_fit = any_fit || r.result.has_value();
  if (!any_fit && !first_no_fit.empty()) throw NoSplitFits(first_no_fit);
  out.seconds = elapsed();
  return out;
}

}  // namespace optpipe::partition
