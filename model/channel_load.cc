#include "model/channel_load.h"

namespace optpipe {

std::vector<ChannelLoad> channel_loads(const SimResult& sim) {
  std::vector<ChannelLoad> out(static_cast<std::size_t>(2 * sim.num_groups));
  for (int g = 0; g < sim.num_groups; ++g) {
    out[2 * g].group = out[2 * g + 1].group = g;
    out[2 * g + 1].reload = true;
  }
  for (const Transfer& t : sim.transfers) {
    if (!t.started || t.group < 0 || t.group >= sim.num_groups) continue;
    ChannelLoad& c = out[static_cast<std::size_t>(2 * t.group + (t.kind == Transfer::Kind::kReload ? 1 : 0))];
    c.busy += t.end - t.start;
    ++c.transfers;
  }
  return out;
}

const ChannelLoad* busiest_channel(const std::vector<ChannelLoad>& loads) {
  const ChannelLoad* best = nullptr;
  for (const ChannelLoad& c : loads) {
    if (c.transfers > 0 && (!best || c.busy > best->busy + 1e-9)) best = &c;
  }
  return best;
}

}  // namespace optpipe
