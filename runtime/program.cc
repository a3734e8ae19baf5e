#include "runtime/program.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "model/error.h"
#include "model/simulator.h"
#include "model/validator.h"

namespace optpipe::runtime {

const char* to_string(Instr i) {
  switch (i) {
    case Instr::kWaitInput: return "wait-input";
    case Instr::kForward: return "F";
    case Instr::kSendOutput: return "send-output";
    case Instr::kStartOffload: return "offload";
    case Instr::kIssueReload: return "reload";
    case Instr::kWaitGrad: return "wait-grad";
    case Instr::kWaitReload: return "wait-reload";
    case Instr::kBackward: return "B";
    case Instr::kSendGrad: return "send-grad";
    case Instr::kWeight: return "W";
  }
  return "?";
}

namespace {

// The simulated allocation order of each device (see program.h) as tickets on its kForward and
// kIssueReload steps.
void assign_tickets(const Instance& inst, const Schedule& sch, const SimResult& sim, std::vector<DeviceProgram>& out) {
  // A moment the device allocates: an F starts, or a reload starts (simulated timing).
  struct Allocation {
    double time;
    int kind;  // 0: F start, 1: reload start
    int order; // F: list index; reload: request order
    int stage, mb;
  };
  std::vector<std::vector<Allocation>> allocations(static_cast<std::size_t>(inst.num_devices()));
  for (int d = 0; d < inst.num_devices(); ++d) {
    const auto& list = sch.devices[static_cast<std::size_t>(d)];
    for (std::size_t k = 0; k < list.size(); ++k) {
      if (list[k].type != OpType::F) continue;
      allocations[static_cast<std::size_t>(d)].push_back(
          {sim.timeline[static_cast<std::size_t>(d)][k].start, 0, static_cast<int>(k), list[k].stage, list[k].mb});
    }
  }
  for (std::size_t q = 0; q < sim.transfers.size(); ++q) {
    const Transfer& t = sim.transfers[q];
    if (t.kind != Transfer::Kind::kReload) continue;
    allocations[static_cast<std::size_t>(t.device)].push_back({t.start, 1, static_cast<int>(q), t.stage, t.mb});
  }
  // Channel tickets: the transfers of each (group, direction) in request order, which is the
  // order the channel serves them (spec §4).
  std::vector<int> next_d2h(static_cast<std::size_t>(sim.num_groups), 0), next_h2d(next_d2h);
  for (const Transfer& t : sim.transfers) {
    const bool off = t.kind == Transfer::Kind::kOffload;
    int& next = (off ? next_d2h : next_h2d)[static_cast<std::size_t>(t.group)];
    const Instr want = off ? Instr::kStartOffload : Instr::kIssueReload;
    for (Step& st : out[static_cast<std::size_t>(t.device)].steps) {
      if (st.op == want && st.stage == t.stage && st.mb == t.mb) {
        st.channel = t.group;
        st.channel_ticket = next;
      }
    }
    ++next;
  }
  for (int d = 0; d < inst.num_devices(); ++d) {
    auto& allocs = allocations[static_cast<std::size_t>(d)];
    std::sort(allocs.begin(), allocs.end(), [](const Allocation& a, const Allocation& b) {
      if (a.time != b.time) return a.time < b.time;
      if (a.kind != b.kind) return a.kind < b.kind;
      return a.order < b.order;
    });
    DeviceProgram& p = out[static_cast<std::size_t>(d)];
    p.num_allocations = static_cast<int>(allocs.size());
    for (std::size_t k = 0; k < allocs.size(); ++k) {
      const Instr want = allocs[k].kind == 0 ? Instr::kForward : Instr::kIssueReload;
      for (Step& st : p.steps) {
        if (st.op == want && st.stage == allocs[k].stage && st.mb == allocs[k].mb) st.ticket = static_cast<int>(k);
      }
    }
  }
}

}  // namespace

std::vector<DeviceProgram> lower_schedule(const Instance& inst, const Schedule& sch) {
  if (!sch.instance.empty() && !inst.name.empty() && sch.instance != inst.name) {
    throw InputError("the schedule is for instance '" + sch.instance + "', not '" + inst.name + "'");
  }
  SimOptions so;
  so.record_memory = false;
  const Validation v = validate(inst, sch, so);
  if (!v.valid()) {
    std::string msg = "the schedule cannot run on this instance: " + v.violations.front().message;
    if (v.violations.size() > 1) msg += " (and " + std::to_string(v.violations.size() - 1) + " more problems)";
    throw InputError(msg);
  }
  const int S = inst.num_stages();
  std::vector<DeviceProgram> out(static_cast<std::size_t>(inst.num_devices()));
  for (int d = 0; d < inst.num_devices(); ++d) {
    DeviceProgram& p = out[static_cast<std::size_t>(d)];
    p.device = d;
    for (const Action& a : sch.devices[static_cast<std::size_t>(d)]) {
      const int s = a.stage, j = a.mb;
      const int prev = s > 0 ? inst.stages[static_cast<std::size_t>(s - 1)].device : -1;
      const int next = s + 1 < S ? inst.stages[static_cast<std::size_t>(s + 1)].device : -1;
      switch (a.type) {
        case OpType::F:
          if (prev >= 0 && prev != d) {
            p.steps.push_back({Instr::kWaitInput, s, j, 0.0, prev});
            p.receives.push_back({Instr::kWaitInput, s, j, 0.0, prev});
          }
          p.steps.push_back({Instr::kForward, s, j, a.r, -1});
          if (next >= 0 && next != d) {
            p.steps.push_back({Instr::kSendOutput, s, j, 0.0, next});
            ++p.num_sends;
          }
          if (a.r > 0) p.steps.push_back({Instr::kStartOffload, s, j, a.r, -1});
          break;
        case OpType::R:
          p.steps.push_back({Instr::kIssueReload, s, j, 0.0, -1});
          break;
        case OpType::B: {
          if (next >= 0 && next != d) {
            p.steps.push_back({Instr::kWaitGrad, s, j, 0.0, next});
            p.receives.push_back({Instr::kWaitGrad, s, j, 0.0, next});
          }
          p.steps.push_back({Instr::kWaitReload, s, j, 0.0, -1});  // a no-op unless offloaded
          p.steps.push_back({Instr::kBackward, s, j, 0.0, -1});
          if (prev >= 0 && prev != d) {
            p.steps.push_back({Instr::kSendGrad, s, j, 0.0, prev});
            ++p.num_sends;
          }
          break;
        }
        case OpType::W:
          p.steps.push_back({Instr::kWeight, s, j, 0.0, -1});
          break;
      }
    }
  }
  assign_tickets(inst, sch, *v.sim, out);
  return out;
}

ChannelCounts channel_counts(const std::vector<DeviceProgram>& programs, int groups) {
  ChannelCounts c;
  c.d2h.assign(static_cast<std::size_t>(groups), 0);
  c.h2d.assign(static_cast<std::size_t>(groups), 0);
  for (const DeviceProgram& p : programs) {
    for (const Step& st : p.steps) {
      if (st.channel < 0) continue;
      if (st.op == Instr::kStartOffload) ++c.d2h[static_cast<std::size_t>(st.channel)];
      if (st.op == Instr::kIssueReload) ++c.h2d[static_cast<std::size_t>(st.channel)];
    }
  }
  return c;
}

int message_tag(const Instance& inst, int kind, int stage, int mb, int iteration) {
  const int per_kind = inst.num_stages() * inst.microbatches;
  return ((iteration & 1) * 2 + kind) * per_kind + stage * inst.microbatches + mb;
}

std::string to_string(const DeviceProgram& p) {
  std::ostringstream o;
  for (std::size_t k = 0; k < p.steps.size(); ++k) {
    const Step& s = p.steps[k];
    char buf[96];
    std::snprintf(buf, sizeof buf, "%4zu  %-12s %d.%d", k, to_string(s.op), s.stage, s.mb);
    o << buf;
    if (s.r > 0) o << "  (r " << s.r << ")";
    if (s.peer >= 0) o << "  (device " << s.peer << ")";
    o << "\n";
  }
  return o.str();
}

}  // namespace optpipe::runtime
