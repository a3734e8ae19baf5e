#include "plan/option_screen.h"

#include <limits>

#include "frontier/memory_floor.h"
#include "model/bytes.h"
#include "partition/partition_model.h"
#include "partition/partition_search.h"
#include "partition/reference_splits.h"
#include "partition/split_enumerator.h"
#include "plan/option_costs.h"

namespace optpipe::plan {
namespace {

gen::Generated generate_split(gen::GenerateOptions o, const std::vector<int>& split) {
  o.split = split;
  return gen::generate(o);
}

// The split of least cheap bound whose exact floor fits, from the enumeration with a falling
// cutoff (partition_search's least-bound split, with the floor checked on each instance).
std::optional<std::vector<int>> least_bound_fitting(const partition::PartitionModel& model, std::int64_t node_limit) {
  partition::EnumerateLimits limits;
  limits.node_limit = node_limit;
  std::optional<std::vector<int>> best;
  partition::enumerate_splits(model, limits, [&](const std::vector<int>& split, double) {
    const Instance inst = model.instance(split);
    if (!partition::tightest(partition::memory_floors(inst)).fits()) return true;
    const double bound = partition::cheap_bound(inst).value;
    best = split;
    limits.cutoff = bound * (1 - 1e-9);
    return true;
  });
  return best;
}

}  // namespace

Screened screen_option(const PlanRequest& request, const PlanOption& option, std::int64_t node_limit) {
  Screened out;
  out.option = option;
  const gen::GenerateOptions o = generate_options(request, option);
  const int L = o.model.layers, S = option.stages();
  const std::optional<std::vector<int>> default_split = partition::generator_default_split(L, S);
  out.split = default_split ? *default_split : partition::uniform_split(L, S);
  out.split_role = default_split ? "default" : "uniform";
  gen::Generated g = generate_split(o, out.split);
  out.floor = partition::tightest(partition::memory_floors(g.instance));
  if (!default_split) out.uniform_bound = partition::cheap_bound(g.instance).value;
  if (!default_split || !out.floor.fits()) {
    const partition::PartitionModel model = partition::PartitionModel::from_generator(o);
    const std::optional<std::vector<int>> other = least_bound_fitting(model, node_limit);
    if (!other && !out.floor.fits()) {
      out.no_fit = partition::explain_no_fit(model);
      return out;
    }
    if (other) {
      out.split = *other;
      out.split_role = "least bound";
      g = generate_split(o, *other);
      out.floor = partition::tightest(partition::memory_floors(g.instance));
    }
  }
  out.fits = true;
  out.bound = partition::cheap_bound(g.instance);
  out.sync = dp_sync_per_device(o, g);
  out.time_bound = time_lower_bound(out.bound.value, out.sync);
  out.generated = std::move(g);
  return out;
}

std::string explain_nothing_fits(const PlanRequest& request, const std::vector<Screened>& screened) {
  const Screened* closest = nullptr;
  for (const Screened& s : screened) {
    if (!closest || s.over_limit() < closest->over_limit()) closest = &s;
  }
  if (!closest) return "no option to run";
  gen::GenerateOptions o = generate_options(request, closest->option);
  o.split = closest->split;  // the starting split (default, else uniform) that is over the limit
  const Instance inst = gen::generate(o).instance;
  const frontier::MemoryFloor floor = frontier::memory_floor(inst);
  return "no option fits the memory limit of " + format_bytes(inst.devices[0].memory_limit) + " per GPU (" +
         std::to_string(screened.size()) + " options screened); the closest is " + closest->option.label() +
         ": with its " + (partition::generator_default_split(o.model.layers, closest->option.stages()) ? "default" : "uniform") +
         " split " + partition::split_text(closest->split) + " the memory floor is " + floor.explain() + ", " +
         format_bytes(floor.lower - inst.devices[0].memory_limit) + " over the limit; " + closest->no_fit;
}

}  // namespace optpipe::plan
