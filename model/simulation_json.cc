#include "model/simulation_json.h"

#include <cstddef>

#include "model/channel_load.h"
#include "model/json_number.h"

namespace optpipe {
namespace {

using nlohmann::json;

json devices_json(const Instance& inst, const SimResult& sim) {
  json devices = json::array();
  for (int d = 0; d < inst.num_devices(); ++d) {
    int transfers = 0;
    for (const Transfer& t : sim.transfers) transfers += t.device == d ? 1 : 0;
    const double busy = d < static_cast<int>(sim.busy.size()) ? sim.busy[d] : 0.0;
    devices.push_back({{"device", d},
                       {"busy", busy},
                       {"idle", sim.feasible ? finite_or_null(sim.makespan - busy) : json(nullptr)},
                       {"peak_memory", d < static_cast<int>(sim.peak_memory.size()) ? sim.peak_memory[d] : 0.0},
                       {"memory_limit", inst.devices[d].memory_limit},
                       {"transfers", transfers}});
  }
  return devices;
}

json stalls_json(const Schedule& sch, const SimResult& sim) {
  json stalls = json::array();
  for (const Stall& s : sim.stalls) {
    const bool known = s.device >= 0 && s.device < sch.num_devices() && s.list_index >= 0 &&
                       static_cast<std::size_t>(s.list_index) < sch.devices[s.device].size();
    const bool memory = s.kind != Stall::Kind::kInput && s.kind != Stall::Kind::kReloadOffload;
    stalls.push_back({{"kind", to_string(s.kind)},
                      {"device", s.device},
                      {"position", s.list_index},
                      {"action", known ? json(to_string(sch.devices[s.device][s.list_index])) : json(nullptr)},
                      {"needed", memory ? json(s.needed) : json(nullptr)},
                      {"free", memory ? json(s.free) : json(nullptr)}});
  }
  return stalls;
}

json timeline_json(const Schedule& sch, const SimResult& sim) {
  json actions = json::array(), transfers = json::array();
  for (int d = 0; d < sch.num_devices() && d < static_cast<int>(sim.timeline.size()); ++d) {
    for (std::size_t k = 0; k < sch.devices[d].size() && k < sim.timeline[d].size(); ++k) {
      const ActionTiming& t = sim.timeline[d][k];
      actions.push_back({{"device", d},
                         {"position", k},
                         {"action", to_string(sch.devices[d][k])},
                         {"start", finite_or_null(t.start)},
                         {"end", finite_or_null(t.end)}});
    }
  }
  for (const Transfer& t : sim.transfers) {
    transfers.push_back({{"kind", t.kind == Transfer::Kind::kOffload ? "offload" : "reload"},
                         {"device", t.device},
                         {"group", t.group},
                         {"stage", t.stage},
                         {"microbatch", t.mb},
                         {"fraction", t.r},
                         {"bytes", t.bytes},
                         {"request", t.request},
                         {"start", t.started ? json(t.start) : json(nullptr)},
                         {"end", t.finished ? json(t.end) : json(nullptr)}});
  }
  return {{"actions", actions}, {"transfers", transfers}};
}

}  // namespace

const char* to_string(Stall::Kind kind) {
  switch (kind) {
    case Stall::Kind::kInput: return "input";
    case Stall::Kind::kForwardMemory: return "forward_memory";
    case Stall::Kind::kReloadMemory: return "reload_memory";
    case Stall::Kind::kReloadOffload: return "reload_offload";
  }
  return "input";
}

json simulation_json(const Instance& inst, const Schedule& sch, const SimResult& sim, bool timeline) {
  json out{{"feasible", sim.feasible},
           {"reason", sim.feasible ? json(nullptr) : json(sim.reason)},
           {"makespan", sim.feasible ? finite_or_null(sim.makespan) : json(nullptr)},
           {"bubble", sim.feasible ? finite_or_null(sim.bubble) : json(nullptr)},
           {"stop_time", sim.feasible ? json(nullptr) : finite_or_null(sim.stop_time)},
           {"devices", devices_json(inst, sim)},
           {"stalls", stalls_json(sch, sim)}};
  if (!sim.timeline.empty()) {  // the transfers were recorded: how busy each PCIe channel was
    json channels = json::array();
    for (const ChannelLoad& c : channel_loads(sim)) {
      channels.push_back({{"group", c.group},
                          {"direction", c.reload ? "h2d" : "d2h"},
                          {"transfers", c.transfers},
                          {"busy", c.busy},
                          {"share", sim.feasible ? finite_or_null(c.share(sim.makespan)) : json(nullptr)}});
    }
    out["channels"] = std::move(channels);
  }
  if (timeline) out["timeline"] = timeline_json(sch, sim);
  return out;
}

}  // namespace optpipe
