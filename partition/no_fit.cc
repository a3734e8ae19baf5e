// explain_no_fit (partition_search.h): why no split fits the memory limit, naming the stage and
// by how much. A stage's floor alone on its device (static + one activation) is a lower bound on
// its device's floor, so "needs at least" and "holds at most" below are true statements.
#include <algorithm>
#include <string>
#include <vector>

#include "model/bytes.h"
#include "model/error.h"
#include "partition/cheap_bound.h"
#include "partition/partition_search.h"
#include "partition/reference_splits.h"
#include "partition/stage_floor.h"

namespace optpipe::partition {
namespace {

std::string stage_words(const PartitionModel& m, int s) {
  std::string w = "stage " + std::to_string(s) + " (device " + std::to_string(m.device_of(s));
  if (s == 0 && m.profile().first) w += ", with the embedding";
  if (s == m.stages() - 1 && m.profile().last) w += ", with the output layer";
  return w + ")";
}

std::string layers_word(int n) { return std::to_string(n) + (n == 1 ? " layer" : " layers"); }

}  // namespace

std::string explain_no_fit(const PartitionModel& m) {
  const double limit = m.memory_limit();
  const std::string head = "no split of the " + layers_word(m.layers()) + " into " + std::to_string(m.stages()) +
                           (m.stages() == 1 ? " stage" : " stages") + " fits the memory limit " + format_bytes(limit);
  // The fewest layers stage s can hold: all of them when it is the only stage.
  auto fewest = [&](int s) { return m.stages() == 1 ? m.layers() : m.min_layers(s); };
  int worst = -1;
  StageFloor worst_floor;
  for (int s = 0; s < m.stages(); ++s) {
    const StageFloor f = least_stage_floor(m, s, fewest(s));
    if (f.bytes > limit && (worst < 0 || f.bytes > worst_floor.bytes)) worst = s, worst_floor = f;
  }
  if (worst >= 0) {
    return head + ": " + stage_words(m, worst) + " needs at least " + format_bytes(worst_floor.bytes) + " with " +
           layers_word(fewest(worst)) + " (static " + format_bytes(worst_floor.static_bytes) +
           " + one activation " + format_bytes(worst_floor.activation) + "), " +
           format_bytes(worst_floor.bytes - limit) + " over the limit";
  }
  const std::vector<int> cap = stage_capacities(m, 0.0);
  int total = 0, cheapest = -1;
  StageFloor cheapest_floor;
  for (int s = 0; s < m.stages(); ++s) {
    total += cap[s];
    const StageFloor more = least_stage_floor(m, s, cap[s] + 1);
    if (cheapest < 0 || more.bytes < cheapest_floor.bytes) cheapest = s, cheapest_floor = more;
  }
  if (total < m.layers()) {
    std::string caps = split_text(cap);
    return head + ": the stages hold at most " + std::to_string(total) + " of them (at most " + caps +
           " per stage); one more layer on " + stage_words(m, cheapest) + " needs at least " +
           format_bytes(cheapest_floor.bytes) + " (static " + format_bytes(cheapest_floor.static_bytes) +
           " + one activation " + format_bytes(cheapest_floor.activation) + "), " +
           format_bytes(cheapest_floor.bytes - limit) + " over the limit";
  }
  const std::vector<int> uniform = uniform_split(m.layers(), m.stages());
  MemoryFloor f;
  try {
    f = tightest(memory_floors(m.instance(uniform)));
  } catch (const InputError&) {  // the uniform split leaves a stage without its layer
    return head + ": stages that share a device hold each other's activations";
  }
  return head + ": stages that share a device hold each other's activations; e.g. with the uniform split " +
         split_text(uniform) + " device " + std::to_string(f.device) + " needs at least " + format_bytes(f.bytes) +
         " (static " + format_bytes(f.static_bytes) + " + activations " + format_bytes(f.activations) + "), " +
         format_bytes(f.bytes - f.limit) + " over the limit";
}

}  // namespace optpipe::partition
