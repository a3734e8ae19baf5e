#include "model/simulator.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "model/bytes.h"
#include "model/error.h"

namespace optpipe {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

bool known(double x) { return x == x; }

std::string fmt_ms(double t) {
  std::ostringstream s;
  s.precision(6);
  s << t;
  return s.str();
}

}  // namespace

Simulator::Simulator(const Instance& instance)
    : inst_(instance), D_(instance.num_devices()), S_(instance.num_stages()), m_(instance.microbatches) {
  std::map<int, int> groups;
  group_of_.resize(D_);
  for (int d = 0; d < D_; ++d) {
    auto it = groups.emplace(instance.devices[d].pcie_group, static_cast<int>(groups.size())).first;
    group_of_[d] = it->second;
  }
  G_ = static_cast<int>(groups.size());
  dur_.resize(3 * S_);
  for (int s = 0; s < S_; ++s) {
    for (OpType t : {OpType::F, OpType::B, OpType::W}) dur_[static_cast<int>(t) * S_ + s] = instance.duration(t, s);
  }
  comm_after_.resize(S_);
  for (int s = 0; s + 1 < S_; ++s) comm_after_[s] = instance.comm_after(s);
}

void Simulator::reset_state(const SimOptions& options) {
  opt_ = options;
  s_.pc.assign(D_, 0);
  s_.running.assign(D_, 0);
  s_.run_end.assign(D_, 0.0);
  s_.run_index.assign(D_, -1);
  s_.now.assign(D_, 0.0);
  s_.mem.resize(D_);
  s_.peak.resize(D_);
  for (int d = 0; d < D_; ++d) s_.mem[d] = s_.peak[d] = inst_.devices[d].static_memory;
  s_.start.assign(static_cast<std::size_t>(3) * S_ * m_, kNaN);
  s_.end.assign(static_cast<std::size_t>(3) * S_ * m_, kNaN);
  s_.level.assign(static_cast<std::size_t>(S_) * m_, 0.0);
  s_.off_end.assign(static_cast<std::size_t>(S_) * m_, kNaN);
  s_.rel_end.assign(static_cast<std::size_t>(S_) * m_, kNaN);
  s_.d2h.resize(G_);
  s_.h2d.resize(G_);
  for (auto* chans : {&s_.d2h, &s_.h2d}) {
    for (Channel& ch : *chans) {
      ch.queue.clear();
      ch.head = 0;
      ch.busy = false;
      ch.busy_end = ch.free_at = 0;
    }
  }
  s_.transfers.clear();
  while (!s_.events.empty()) s_.events.pop();
  s_.device_dirty.assign(D_, 0);
  s_.dirty_devices.clear();
  scratch_.clear();
  s_.d2h_dirty.assign(G_, 0);
  s_.h2d_dirty.assign(G_, 0);
  s_.dirty_d2h.clear();
  s_.dirty_h2d.clear();
  s_.remaining = 0;
  s_.makespan = 0;
  s_.t = 0;
  s_.open = false;
  s_.owned.devices.clear();
  s_.unlisted.assign(D_, 0);
  s_.next_mb.clear();
  // Everything may be able to start at t = 0.
  for (int d = 0; d < D_; ++d) mark_device(d);
  for (int g = 0; g < G_; ++g) {
    mark_channel(g, false);
    mark_channel(g, true);
  }
}

void Simulator::reset(const Schedule& schedule, const SimOptions& options) {
  if (schedule.num_devices() != D_) {
    throw InputError("schedule has " + std::to_string(schedule.num_devices()) + " device lists, the instance " +
                     std::to_string(D_) + " devices");
  }
  sch_ = &schedule;
  reset_state(options);
  for (int d = 0; d < D_; ++d) {
    const auto& lst = schedule.devices[d];
    for (std::size_t k = 0; k < lst.size(); ++k) {
      const Action& a = lst[k];
      if (a.stage < 0 || a.stage >= S_ || a.mb < 0 || a.mb >= m_) {
        throw InputError("devices[" + std::to_string(d) + "][" + std::to_string(k) + "]: " + to_string(a) +
                         " refers to a stage or microbatch the instance does not have");
      }
      if (a.type == OpType::F) s_.level[static_cast<std::size_t>(a.stage) * m_ + a.mb] = a.r;
      if (a.is_compute()) ++s_.remaining;
    }
  }
}

void Simulator::start_open() {
  const SimOptions quiet = SimOptions::quiet();
  sch_ = nullptr;
  out_ = nullptr;
  reset_state(quiet);
  s_.open = true;
  s_.owned.devices.assign(D_, {});
  s_.next_mb.assign(static_cast<std::size_t>(4) * S_, 0);
  const int types = inst_.num_compute_types();
  for (int st = 0; st < S_; ++st) s_.unlisted[inst_.stages[st].device] += types * m_;
  for (int d = 0; d < D_; ++d) s_.remaining += s_.unlisted[d];
}

void Simulator::restore(const Snapshot& snapshot) {
  s_ = snapshot;
  opt_ = SimOptions::quiet();
  out_ = nullptr;
  sch_ = nullptr;
}

void Simulator::append(int d, const Action& a) {
  s_.owned.devices[d].push_back(a);
  if (a.type == OpType::F) s_.level[static_cast<std::size_t>(a.stage) * m_ + a.mb] = a.r;
  if (a.is_compute()) --s_.unlisted[d];
  s_.next_mb[static_cast<std::size_t>(a.type) * S_ + a.stage] = a.mb + 1;
  mark_device(d);
}

Simulator::Step Simulator::advance() {
  auto due = [&]() { return !s_.events.empty() && s_.events.top().time <= s_.t + kTimeEps; };
  while (true) {
    // Settle everything that happens at time t (see the header for the order).
    while (true) {
      while (due()) {
        const PendingEvent e = s_.events.top();
        s_.events.pop();
        handle(e);
      }
      bool progress = false;
      // Only devices whose situation changed can start something; their order does not matter
      // (a device's starts touch only its own memory, and requests are queued by time, device
      // and list position whatever order they arrive in).
      while (!s_.dirty_devices.empty()) {
        const int d = s_.dirty_devices.back();
        s_.dirty_devices.pop_back();
        s_.device_dirty[d] = 0;
        if (s_.running[d]) continue;
        const DeviceStep r = advance_device(d, s_.t);
        if (r == DeviceStep::kNeedsDecision) return {Step::Kind::kDecision, d, s_.t};
        progress |= r == DeviceStep::kProgress;
      }
      progress |= start_dirty_channels(s_.t, false);
      if (progress || due()) continue;
      // Additions of reloads come last at an instant.
      if (!start_dirty_channels(s_.t, true) && !due() && s_.dirty_devices.empty()) break;
    }
    if (s_.remaining == 0) return {Step::Kind::kDone, -1, s_.t};
    if (s_.events.empty()) return {Step::Kind::kDeadlock, -1, s_.t};
    if (record_ != nullptr && ++instants_ >= record_every_) {
      instants_ = 0;
      record_->push_back(s_);
    }
    s_.t = s_.events.top().time;
  }
}

SimResult Simulator::run(const Schedule& schedule, const SimOptions& options) {
  SimResult result;
  out_ = &result;
  reset(schedule, options);
  result.group_of_device = group_of_;
  result.num_groups = G_;
  if (opt_.record_timeline) {
    result.timeline.resize(D_);
    for (int d = 0; d < D_; ++d) result.timeline[d].assign(schedule.devices[d].size(), ActionTiming{});
  }
  if (opt_.record_memory) {
    result.memory.resize(D_);
    for (int d = 0; d < D_; ++d) result.memory[d].push_back({0.0, s_.mem[d]});
  }
  finish(advance());
  return result;
}

// Sends the checkpoints of one run to `record` (null: none), and stops when the run ends or throws.
class Simulator::Recording {
 public:
  Recording(Simulator& sim, std::vector<Snapshot>* record, int every) : sim_(sim) {
    sim_.record_ = record;
    sim_.record_every_ = std::max(1, every);
    sim_.instants_ = 0;
  }
  ~Recording() { sim_.record_ = nullptr; }
  Recording(const Recording&) = delete;
  Recording& operator=(const Recording&) = delete;

 private:
  Simulator& sim_;
};

SimResult Simulator::run_recording(const Schedule& schedule, int every, std::vector<Snapshot>& checkpoints) {
  const Recording recording(*this, &checkpoints, every);
  return run(schedule, SimOptions::quiet());
}

SimResult Simulator::resume(const Schedule& schedule, const Snapshot& checkpoint, int every,
                            std::vector<Snapshot>* record) {
  SimResult result;
  out_ = &result;
  sch_ = &schedule;
  opt_ = SimOptions::quiet();
  s_ = checkpoint;
  // The offload levels come from the F entries (reset() reads them from the whole schedule); the
  // entries the checkpoint's state depends on are the same in both schedules.
  for (const auto& lst : schedule.devices) {
    for (const Action& a : lst) {
      if (a.type == OpType::F) s_.level[static_cast<std::size_t>(a.stage) * m_ + a.mb] = a.r;
    }
  }
  result.group_of_device = group_of_;
  result.num_groups = G_;
  const Recording recording(*this, record, every);
  finish(advance());
  return result;
}

void Simulator::finish(Step step) {
  SimResult& result = *out_;
  const bool deadlocked = step.kind == Step::Kind::kDeadlock;
  if (deadlocked) {
    result.stop_time = s_.t;
    result.stalls = find_stalls();
    result.reason = describe_deadlock(s_.t, result.stalls);
  }
  while (!s_.events.empty()) s_.events.pop();

  result.feasible = !deadlocked;
  result.makespan = s_.makespan;
  result.busy.resize(D_);
  double total_busy = 0;
  for (int d = 0; d < D_; ++d) {
    result.busy[d] = inst_.busy_time(d);
    total_busy += result.busy[d];
  }
  if (deadlocked) {
    result.bubble = kNaN;  // the ops that never ran make a bubble meaningless
  } else {
    result.bubble = s_.makespan > 0 ? 1.0 - total_busy / (D_ * s_.makespan) : 0.0;
  }
  result.peak_memory = s_.peak;
  if (opt_.record_timeline) result.transfers = s_.transfers;
  out_ = nullptr;
}

void Simulator::mark_device(int d) {
  if (s_.device_dirty[d]) return;
  s_.device_dirty[d] = 1;
  s_.dirty_devices.push_back(d);
}

void Simulator::mark_channel(int g, bool reload) {
  auto& dirty = reload ? s_.h2d_dirty : s_.d2h_dirty;
  if (dirty[g]) return;
  dirty[g] = 1;
  (reload ? s_.dirty_h2d : s_.dirty_d2h).push_back(g);
}

// Everything whose wait may end when device d's memory or inputs change.
void Simulator::mark_around(int d, int stage) {
  mark_device(d);
  if (stage > 0) mark_device(inst_.stages[stage - 1].device);
  if (stage + 1 < S_) mark_device(inst_.stages[stage + 1].device);
  mark_channel(group_of_[d], true);
}

void Simulator::handle(const PendingEvent& e) {
  switch (e.kind) {
    case PendingEvent::Kind::kCompute: {
      const Action& a = list(e.id)[s_.run_index[e.id]];
      complete_compute(e.id);
      mark_around(e.id, a.stage);
      break;
    }
    case PendingEvent::Kind::kTransfer: {
      Channel& ch = e.reload ? s_.h2d[e.id] : s_.d2h[e.id];
      const int device = ch.queue[ch.head].device;
      complete_transfer(ch);
      mark_device(device);
      mark_channel(e.id, e.reload);
      mark_channel(e.id, true);  // an offload's end frees memory and unblocks its reload
      break;
    }
    case PendingEvent::Kind::kWake: mark_device(e.id); break;
  }
}

bool Simulator::start_dirty_channels(double t, bool reloads) {
  auto& dirty = reloads ? s_.h2d_dirty : s_.d2h_dirty;
  auto& list = reloads ? s_.dirty_h2d : s_.dirty_d2h;
  auto& chans = reloads ? s_.h2d : s_.d2h;
  if (list.empty()) return false;
  std::sort(list.begin(), list.end());  // channels are independent; sorted only for a fixed order
  std::swap(list, scratch_);
  list.clear();
  bool progress = false;
  for (int g : scratch_) {
    dirty[g] = 0;
    if (try_start_channel(chans[g], t, reloads)) {
      progress = true;
      s_.events.push({chans[g].busy_end, PendingEvent::Kind::kTransfer, g, reloads});
    }
  }
  scratch_.clear();
  return progress;
}

double Simulator::ready_time(const Action& a, bool* ok, int* waiting_op) const {
  const int s = a.stage, j = a.mb;
  double ready = 0.0;
  *ok = true;
  auto need = [&](int op, double extra) {
    const double e = s_.end[op];
    if (!known(e)) {
      *ok = false;
      *waiting_op = op;
      return;
    }
    ready = std::max(ready, e + extra);
  };
  switch (a.type) {
    case OpType::F:
      if (s > 0) need(op_id(OpType::F, s - 1, j), comm_after_[s - 1]);
      break;
    case OpType::B: {
      need(op_id(OpType::F, s, j), 0.0);
      if (*ok && s + 1 < S_) need(op_id(OpType::B, s + 1, j), comm_after_[s]);
      const std::size_t sj = static_cast<std::size_t>(s) * m_ + j;
      if (*ok && s_.level[sj] > 0) {
        if (!known(s_.rel_end[sj])) {
          *ok = false;
          *waiting_op = -1 - static_cast<int>(sj);  // negative: waits for the reload of sj
        } else {
          ready = std::max(ready, s_.rel_end[sj]);
        }
      }
      break;
    }
    case OpType::W: need(op_id(OpType::B, s, j), 0.0); break;
    case OpType::R: break;
  }
  return ready;
}

void Simulator::change_memory(int d, double delta, double t) {
  s_.mem[d] += delta;
  if (s_.mem[d] > s_.peak[d]) s_.peak[d] = s_.mem[d];
  if (opt_.record_memory) {
    auto& curve = out_->memory[d];
    if (!curve.empty() && std::fabs(curve.back().time - t) <= kTimeEps) {
      curve.back().bytes = s_.mem[d];
    } else {
      curve.push_back({t, s_.mem[d]});
    }
  }
}

bool Simulator::complete_compute(int d) {
  const int k = s_.run_index[d];
  const Action& a = list(d)[k];
  const double t = s_.run_end[d];
  s_.running[d] = 0;
  s_.now[d] = t;
  s_.end[op_id(a.type, a.stage, a.mb)] = t;
  s_.makespan = std::max(s_.makespan, t);
  --s_.remaining;
  if (opt_.record_timeline) out_->timeline[d][k].end = t;
  if (a.type == OpType::B) {
    change_memory(d, -inst_.freed_by_b(a.stage), t);
  } else if (a.type == OpType::W) {
    change_memory(d, -inst_.freed_by_w(a.stage), t);
  } else if (a.type == OpType::F && a.r > 0) {
    const Stage& st = inst_.stages[a.stage];
    const int tr = record_transfer(Transfer::Kind::kOffload, d, k, a, a.r, t);
    enqueue(s_.d2h[group_of_[d]], {t, d, k, a.stage * m_ + a.mb, st.offload.value_or(0.0) * a.r,
                                 s_.transfers[tr].bytes, false, tr});
    mark_channel(group_of_[d], false);
  }
  return true;
}

int Simulator::record_transfer(Transfer::Kind kind, int d, int k, const Action& a, double r, double request) {
  Transfer tr;
  tr.kind = kind;
  tr.device = d;
  tr.group = group_of_[d];
  tr.stage = a.stage;
  tr.mb = a.mb;
  tr.list_index = k;
  tr.r = r;
  tr.bytes = inst_.stages[a.stage].activation * r;
  tr.request = request;
  s_.transfers.push_back(tr);
  return static_cast<int>(s_.transfers.size()) - 1;
}

void Simulator::enqueue(Channel& ch, const Request& req) {
  // FIFO by request time; ties (within kTimeEps) by device id, then list order.
  auto before = [](const Request& a, const Request& b) {
    if (std::fabs(a.time - b.time) > kTimeEps) return a.time < b.time;
    if (a.device != b.device) return a.device < b.device;
    return a.list_index < b.list_index;
  };
  auto pos = ch.queue.end();
  while (pos != ch.queue.begin() + static_cast<std::ptrdiff_t>(ch.head) && before(req, *(pos - 1))) --pos;
  ch.queue.insert(pos, req);
}

Simulator::DeviceStep Simulator::advance_device(int d, double t) {
  const auto& lst = list(d);
  bool progress = false;
  const int n = static_cast<int>(lst.size());
  // Reloads reached in the list are requested at now[d].
  while (s_.pc[d] < n && lst[s_.pc[d]].type == OpType::R) {
    const Action& a = lst[s_.pc[d]];
    const std::size_t sj = static_cast<std::size_t>(a.stage) * m_ + a.mb;
    const double r = s_.level[sj];
    const Stage& st = inst_.stages[a.stage];
    const int tr = record_transfer(Transfer::Kind::kReload, d, s_.pc[d], a, r, s_.now[d]);
    enqueue(s_.h2d[group_of_[d]], {s_.now[d], d, s_.pc[d], static_cast<int>(sj), st.reload.value_or(0.0) * r,
                                   s_.transfers[tr].bytes, true, tr});
    mark_channel(group_of_[d], true);
    if (opt_.record_timeline) out_->timeline[d][s_.pc[d]] = {s_.now[d], s_.now[d]};
    ++s_.pc[d];
    progress = true;
  }
  if (s_.pc[d] >= n) {
    // An open list used up while the device still has ops: the search decides what comes next.
    if (s_.open && s_.unlisted[d] > 0) return DeviceStep::kNeedsDecision;
    return progress ? DeviceStep::kProgress : DeviceStep::kNone;
  }
  const Action& a = lst[s_.pc[d]];
  bool ok = false;
  int waiting = -1;
  const double ready = ready_time(a, &ok, &waiting);
  if (!ok) return progress ? DeviceStep::kProgress : DeviceStep::kNone;
  const double start = std::max({s_.now[d], ready, t});
  if (start > t + kTimeEps) {
    s_.events.push({start, PendingEvent::Kind::kWake, d, false});  // inputs arrive later
    return progress ? DeviceStep::kProgress : DeviceStep::kNone;
  }
  if (a.type == OpType::F) {
    const double act = inst_.stages[a.stage].activation;
    if (opt_.enforce_memory_limit && s_.mem[d] + act > inst_.devices[d].memory_limit + kMemoryTolerance) {
      // Waits for memory; only offload ends can free it.
      return progress ? DeviceStep::kProgress : DeviceStep::kNone;
    }
    change_memory(d, act, start);
  }
  const int op = op_id(a.type, a.stage, a.mb);
  s_.start[op] = start;
  s_.running[d] = 1;
  s_.run_index[d] = s_.pc[d];
  s_.run_end[d] = start + dur_[static_cast<int>(a.type) * S_ + a.stage];
  s_.events.push({s_.run_end[d], PendingEvent::Kind::kCompute, d, false});
  if (opt_.record_timeline) out_->timeline[d][s_.pc[d]].start = start;
  ++s_.pc[d];
  return DeviceStep::kProgress;
}

bool Simulator::try_start_channel(Channel& ch, double t, bool reloads) {
  if (ch.busy || ch.head >= ch.queue.size()) return false;
  const Request& req = ch.queue[ch.head];
  if (req.time > t + kTimeEps) return false;
  double start = std::max({req.time, ch.free_at, t});
  if (reloads) {
    const double off = s_.off_end[req.sj];
    if (!known(off) || off > t + kTimeEps) return false;  // waits for its offload
    start = std::max(start, off);
    if (opt_.enforce_memory_limit &&
        s_.mem[req.device] + req.bytes > inst_.devices[req.device].memory_limit + kMemoryTolerance) {
      return false;  // waits for memory, holding the channel
    }
    change_memory(req.device, req.bytes, start);
  }
  ch.busy = true;
  ch.busy_end = start + req.duration;
  Transfer& tr = s_.transfers[req.transfer];
  tr.start = start;
  tr.end = ch.busy_end;
  tr.started = true;
  return true;
}

void Simulator::complete_transfer(Channel& ch) {
  const Request& req = ch.queue[ch.head];
  const double t = ch.busy_end;
  ch.busy = false;
  ch.free_at = t;
  s_.transfers[req.transfer].finished = true;
  if (req.reload) {
    s_.rel_end[req.sj] = t;
  } else {
    s_.off_end[req.sj] = t;
    change_memory(req.device, -req.bytes, t);
  }
  ++ch.head;
}

std::string Simulator::op_name(int op) const {
  if (op < 0) {
    const int sj = -1 - op;
    return "the reload of " + std::to_string(sj / m_) + "." + std::to_string(sj % m_);
  }
  const int type = op / (S_ * m_);
  const int s = (op / m_) % S_;
  const int j = op % m_;
  Action a{static_cast<OpType>(type), s, j, 0.0};
  return to_string(a) + " (device " + std::to_string(inst_.stages[s].device) + ")";
}

std::vector<Stall> Simulator::find_stalls() const {
  std::vector<Stall> out;
  for (int d = 0; d < D_; ++d) {
    const auto& lst = list(d);
    if (s_.pc[d] >= static_cast<int>(lst.size())) continue;
    const Action& a = lst[s_.pc[d]];
    bool ok = false;
    int waiting = -1;
    ready_time(a, &ok, &waiting);
    Stall st;
    st.device = d;
    st.list_index = s_.pc[d];
    if (ok) {
      // Inputs are ready and no event is pending, so only memory can hold it (F).
      st.kind = Stall::Kind::kForwardMemory;
      st.needed = inst_.stages[a.stage].activation;
      st.free = std::max(0.0, inst_.devices[d].memory_limit - s_.mem[d]);
    }
    out.push_back(st);
  }
  for (int g = 0; g < G_; ++g) {
    const Channel& ch = s_.h2d[g];
    if (ch.busy || ch.head >= ch.queue.size()) continue;
    const Request& req = ch.queue[ch.head];
    Stall st;
    st.device = req.device;
    st.list_index = req.list_index;
    if (!known(s_.off_end[req.sj])) {
      st.kind = Stall::Kind::kReloadOffload;
    } else {
      st.kind = Stall::Kind::kReloadMemory;
      st.needed = req.bytes;
      st.free = std::max(0.0, inst_.devices[req.device].memory_limit - s_.mem[req.device]);
    }
    out.push_back(st);
  }
  return out;
}

std::string Simulator::describe_deadlock(double t, const std::vector<Stall>& stalls) const {
  std::ostringstream out;
  out << "deadlock at t=" << fmt_ms(t) << " ms:";
  bool first = true;
  for (const Stall& st : stalls) {
    out << (first ? " " : "; ");
    first = false;
    const Action& a = list(st.device)[st.list_index];
    switch (st.kind) {
      case Stall::Kind::kInput: {
        bool ok = false;
        int waiting = -1;
        ready_time(a, &ok, &waiting);
        out << "device " << st.device << " waits at " << to_string(a) << " (position " << st.list_index << ") for "
            << op_name(waiting);
        if (waiting >= 0 && inst_.stages[(waiting / m_) % S_].device == st.device) {
          out << ", which comes later in its own list";
        }
        break;
      }
      case Stall::Kind::kForwardMemory:
        out << "device " << st.device << " waits at " << to_string(a) << " (position " << st.list_index
            << ") for memory: needs " << format_bytes(st.needed) << ", " << format_bytes(st.free) << " free of "
            << format_bytes(inst_.devices[st.device].memory_limit) << " and nothing in flight frees more";
        break;
      case Stall::Kind::kReloadOffload:
      case Stall::Kind::kReloadMemory:
        out << "the H2D channel of PCIe group " << group_of_[st.device] << " waits at the reload " << to_string(a)
            << " of device " << st.device;
        if (st.kind == Stall::Kind::kReloadOffload) {
          out << " for its offload";
        } else {
          out << " for memory (needs " << format_bytes(st.needed) << ", " << format_bytes(st.free) << " free)";
        }
        break;
    }
  }
  return out.str();
}

SimResult simulate(const Instance& instance, const Schedule& schedule, const SimOptions& options) {
  Simulator sim(instance);
  return sim.run(schedule, options);
}

bool Simulator::forward_wait_never_ends() const {
  const Snapshot& st = s_;
  for (int d = 0; d < D_; ++d) {
    if (st.running[d]) continue;
    const auto& lst = st.owned.devices[d];
    if (st.pc[d] >= static_cast<int>(lst.size())) continue;
    const Action& a = lst[st.pc[d]];
    if (a.type != OpType::F) continue;
    // Whether its inputs are done does not matter: until it starts, the device runs nothing else.
    const double need = inst_.stages[a.stage].activation;
    const double limit = inst_.devices[d].memory_limit + kMemoryTolerance;
    if (st.mem[d] + need <= limit) continue;
    double pending = 0;
    for (const auto& ch : st.d2h) {
      for (std::size_t k = ch.head; k < ch.queue.size(); ++k) {
        if (ch.queue[k].device == d) pending += ch.queue[k].bytes;
      }
    }
    if (st.mem[d] - pending + need > limit) return true;
  }
  return false;
}

}  // namespace optpipe
