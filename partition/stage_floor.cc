#include "partition/stage_floor.h"

namespace optpipe::partition {

StageFloor least_stage_floor(const PartitionModel& m, int s, int count) {
  int before = 0, after = 0;
  for (int t = 0; t < s; ++t) before += m.min_layers(t);
  for (int t = s + 1; t < m.stages(); ++t) after += m.min_layers(t);
  StageFloor best;
  for (int begin = before; begin + count + after <= m.layers(); ++begin) {
    const LayerCost c = m.stage_costs(s, begin, count);
    const double st = m.device_static({c});
    if (st + c.activation < best.bytes) best = StageFloor{st + c.activation, st, c.activation};
  }
  return best;
}

std::vector<int> stage_capacities(const PartitionModel& m, double slack) {
  std::vector<int> cap(m.stages());
  for (int s = 0; s < m.stages(); ++s) {
    cap[s] = m.min_layers(s);
    while (cap[s] < m.layers() && least_stage_floor(m, s, cap[s] + 1).bytes <= m.memory_limit() + slack) ++cap[s];
  }
  return cap;
}

}  // namespace optpipe::partition
