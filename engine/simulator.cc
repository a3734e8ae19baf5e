#include "engine/simulator.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "engine/bytes.h"
#include "engine/error.h"

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

void Simulator::reset(const Schedule& schedule, const SimOptions& options) {
  sch_ = &schedule;
  opt_ = options;
  if (schedule.num_devices() != D_) {
    throw InputError("schedule has " + std::to_string(schedule.num_devices()) + " device lists, the instance " +
                     std::to_string(D_) + " devices");
  }
  pc_.assign(D_, 0);
  running_.assign(D_, 0);
  run_end_.assign(D_, 0.0);
  run_index_.assign(D_, -1);
  now_.assign(D_, 0.0);
  mem_.resize(D_);
  peak_.resize(D_);
  for (int d = 0; d < D_; ++d) mem_[d] = peak_[d] = inst_.devices[d].static_memory;
  start_.assign(static_cast<std::size_t>(3) * S_ * m_, kNaN);
  end_.assign(static_cast<std::size_t>(3) * S_ * m_, kNaN);
  level_.assign(static_cast<std::size_t>(S_) * m_, 0.0);
  off_end_.assign(static_cast<std::size_t>(S_) * m_, kNaN);
  rel_end_.assign(static_cast<std::size_t>(S_) * m_, kNaN);
  d2h_.resize(G_);
  h2d_.resize(G_);
  for (auto* chans : {&d2h_, &h2d_}) {
    for (Channel& ch : *chans) {
      ch.queue.clear();
      ch.head = 0;
      ch.busy = false;
      ch.busy_end = ch.free_at = 0;
    }
  }
  transfers_.clear();
  while (!events_.empty()) events_.pop();
  device_dirty_.assign(D_, 0);
  dirty_devices_.clear();
  scratch_.clear();
  d2h_dirty_.assign(G_, 0);
  h2d_dirty_.assign(G_, 0);
  dirty_d2h_.clear();
  dirty_h2d_.clear();
  remaining_ = 0;
  makespan_ = 0;
  for (int d = 0; d < D_; ++d) {
    const auto& list = schedule.devices[d];
    for (std::size_t k = 0; k < list.size(); ++k) {
      const Action& a = list[k];
      if (a.stage < 0 || a.stage >= S_ || a.mb < 0 || a.mb >= m_) {
        throw InputError("devices[" + std::to_string(d) + "][" + std::to_string(k) + "]: " + to_string(a) +
                         " refers to a stage or microbatch the instance does not have");
      }
      if (a.type == OpType::F) level_[static_cast<std::size_t>(a.stage) * m_ + a.mb] = a.r;
      if (a.is_compute()) ++remaining_;
    }
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
    for (int d = 0; d < D_; ++d) result.memory[d].push_back({0.0, mem_[d]});
  }

  // All devices and channels start dirty: everything may be able to start at t = 0.
  for (int d = 0; d < D_; ++d) mark_device(d);
  for (int g = 0; g < G_; ++g) mark_channel(g, false), mark_channel(g, true);

  double t = 0.0;
  bool deadlocked = false;
  while (true) {
    // Settle everything that happens at time t (see the header for the order).
    while (true) {
      while (!events_.empty() && events_.top().time <= t + kTimeEps) {
        const Event e = events_.top();
        events_.pop();
        handle(e);
      }
      bool progress = false;
      // Devices in id order; only those whose situation changed can start something.
      std::sort(dirty_devices_.begin(), dirty_devices_.end());
      std::swap(dirty_devices_, scratch_);
      dirty_devices_.clear();
      for (int d : scratch_) {
        device_dirty_[d] = 0;
        if (!running_[d]) progress |= advance_device(d, t);
      }
      scratch_.clear();
      progress |= start_dirty_channels(t, false);
      if (progress || (!events_.empty() && events_.top().time <= t + kTimeEps)) continue;
      // Additions of reloads come last at an instant.
      if (!start_dirty_channels(t, true) && (events_.empty() || events_.top().time > t + kTimeEps) &&
          dirty_devices_.empty()) {
        break;
      }
    }
    if (remaining_ == 0) break;
    if (events_.empty()) {
      deadlocked = true;
      result.stop_time = t;
      result.stalls = find_stalls();
      result.reason = describe_deadlock(t, result.stalls);
      break;
    }
    t = events_.top().time;
  }
  while (!events_.empty()) events_.pop();

  result.feasible = !deadlocked;
  result.makespan = makespan_;
  result.busy.resize(D_);
  double total_busy = 0;
  for (int d = 0; d < D_; ++d) {
    result.busy[d] = inst_.busy_time(d);
    total_busy += result.busy[d];
  }
  if (deadlocked) {
    result.bubble = kNaN;  // the ops that never ran make a bubble meaningless
  } else {
    result.bubble = makespan_ > 0 ? 1.0 - total_busy / (D_ * makespan_) : 0.0;
  }
  result.peak_memory = peak_;
  if (opt_.record_timeline) result.transfers = transfers_;
  out_ = nullptr;
  return result;
}

void Simulator::mark_device(int d) {
  if (device_dirty_[d]) return;
  device_dirty_[d] = 1;
  dirty_devices_.push_back(d);
}

void Simulator::mark_channel(int g, bool reload) {
  auto& dirty = reload ? h2d_dirty_ : d2h_dirty_;
  if (dirty[g]) return;
  dirty[g] = 1;
  (reload ? dirty_h2d_ : dirty_d2h_).push_back(g);
}

// Everything whose wait may end when device d's memory or inputs change.
void Simulator::mark_around(int d, int stage) {
  mark_device(d);
  if (stage > 0) mark_device(inst_.stages[stage - 1].device);
  if (stage + 1 < S_) mark_device(inst_.stages[stage + 1].device);
  mark_channel(group_of_[d], true);
}

void Simulator::handle(const Event& e) {
  switch (e.kind) {
    case Event::Kind::kCompute: {
      const Action& a = sch_->devices[e.id][run_index_[e.id]];
      complete_compute(e.id);
      mark_around(e.id, a.stage);
      break;
    }
    case Event::Kind::kTransfer: {
      Channel& ch = e.reload ? h2d_[e.id] : d2h_[e.id];
      const int device = ch.queue[ch.head].device;
      complete_transfer(ch);
      mark_device(device);
      mark_channel(e.id, e.reload);
      mark_channel(e.id, true);  // an offload's end frees memory and unblocks its reload
      break;
    }
    case Event::Kind::kWake: mark_device(e.id); break;
  }
}

bool Simulator::start_dirty_channels(double t, bool reloads) {
  auto& dirty = reloads ? h2d_dirty_ : d2h_dirty_;
  auto& list = reloads ? dirty_h2d_ : dirty_d2h_;
  auto& chans = reloads ? h2d_ : d2h_;
  if (list.empty()) return false;
  std::sort(list.begin(), list.end());  // channels are independent; sorted only for a fixed order
  std::swap(list, scratch_);
  list.clear();
  bool progress = false;
  for (int g : scratch_) {
    dirty[g] = 0;
    if (try_start_channel(chans[g], t, reloads)) {
      progress = true;
      events_.push({chans[g].busy_end, Event::Kind::kTransfer, g, reloads});
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
    const double e = end_[op];
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
      if (*ok && level_[sj] > 0) {
        if (!known(rel_end_[sj])) {
          *ok = false;
          *waiting_op = -1 - static_cast<int>(sj);  // negative: waits for the reload of sj
        } else {
          ready = std::max(ready, rel_end_[sj]);
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
  mem_[d] += delta;
  if (mem_[d] > peak_[d]) peak_[d] = mem_[d];
  if (opt_.record_memory) {
    auto& curve = out_->memory[d];
    if (!curve.empty() && std::fabs(curve.back().time - t) <= kTimeEps) {
      curve.back().bytes = mem_[d];
    } else {
      curve.push_back({t, mem_[d]});
    }
  }
}

bool Simulator::complete_compute(int d) {
  const int k = run_index_[d];
  const Action& a = sch_->devices[d][k];
  const double t = run_end_[d];
  running_[d] = 0;
  now_[d] = t;
  end_[op_id(a.type, a.stage, a.mb)] = t;
  makespan_ = std::max(makespan_, t);
  --remaining_;
  if (opt_.record_timeline) out_->timeline[d][k].end = t;
  if (a.type == OpType::B) {
    change_memory(d, -inst_.freed_by_b(a.stage), t);
  } else if (a.type == OpType::W) {
    change_memory(d, -inst_.freed_by_w(a.stage), t);
  } else if (a.type == OpType::F && a.r > 0) {
    const Stage& st = inst_.stages[a.stage];
    const int tr = record_transfer(Transfer::Kind::kOffload, d, k, a, a.r, t);
    enqueue(d2h_[group_of_[d]], {t, d, k, a.stage * m_ + a.mb, st.offload.value_or(0.0) * a.r,
                                 transfers_[tr].bytes, false, tr});
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
  transfers_.push_back(tr);
  return static_cast<int>(transfers_.size()) - 1;
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

bool Simulator::advance_device(int d, double t) {
  const auto& list = sch_->devices[d];
  bool progress = false;
  const int n = static_cast<int>(list.size());
  // Reloads reached in the list are requested at now[d].
  while (pc_[d] < n && list[pc_[d]].type == OpType::R) {
    const Action& a = list[pc_[d]];
    const std::size_t sj = static_cast<std::size_t>(a.stage) * m_ + a.mb;
    const double r = level_[sj];
    const Stage& st = inst_.stages[a.stage];
    const int tr = record_transfer(Transfer::Kind::kReload, d, pc_[d], a, r, now_[d]);
    enqueue(h2d_[group_of_[d]], {now_[d], d, pc_[d], static_cast<int>(sj), st.reload.value_or(0.0) * r,
                                 transfers_[tr].bytes, true, tr});
    mark_channel(group_of_[d], true);
    if (opt_.record_timeline) out_->timeline[d][pc_[d]] = {now_[d], now_[d]};
    ++pc_[d];
    progress = true;
  }
  if (pc_[d] >= n) return progress;
  const Action& a = list[pc_[d]];
  bool ok = false;
  int waiting = -1;
  const double ready = ready_time(a, &ok, &waiting);
  if (!ok) return progress;
  const double start = std::max({now_[d], ready, t});
  if (start > t + kTimeEps) {
    events_.push({start, Event::Kind::kWake, d, false});  // inputs arrive later
    return progress;
  }
  if (a.type == OpType::F) {
    const double act = inst_.stages[a.stage].activation;
    if (opt_.enforce_memory_limit && mem_[d] + act > inst_.devices[d].memory_limit + kMemoryTolerance) {
      return progress;  // waits for memory; only offload ends can free it
    }
    change_memory(d, act, start);
  }
  const int op = op_id(a.type, a.stage, a.mb);
  start_[op] = start;
  running_[d] = 1;
  run_index_[d] = pc_[d];
  run_end_[d] = start + dur_[static_cast<int>(a.type) * S_ + a.stage];
  events_.push({run_end_[d], Event::Kind::kCompute, d, false});
  if (opt_.record_timeline) out_->timeline[d][pc_[d]].start = start;
  ++pc_[d];
  return true;
}

bool Simulator::try_start_channel(Channel& ch, double t, bool reloads) {
  if (ch.busy || ch.head >= ch.queue.size()) return false;
  const Request& req = ch.queue[ch.head];
  if (req.time > t + kTimeEps) return false;
  double start = std::max({req.time, ch.free_at, t});
  if (reloads) {
    const double off = off_end_[req.sj];
    if (!known(off) || off > t + kTimeEps) return false;  // waits for its offload
    start = std::max(start, off);
    if (opt_.enforce_memory_limit &&
        mem_[req.device] + req.bytes > inst_.devices[req.device].memory_limit + kMemoryTolerance) {
      return false;  // waits for memory, holding the channel
    }
    change_memory(req.device, req.bytes, start);
  }
  ch.busy = true;
  ch.busy_end = start + req.duration;
  Transfer& tr = transfers_[req.transfer];
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
  transfers_[req.transfer].finished = true;
  if (req.reload) {
    rel_end_[req.sj] = t;
  } else {
    off_end_[req.sj] = t;
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
    const auto& list = sch_->devices[d];
    if (pc_[d] >= static_cast<int>(list.size())) continue;
    const Action& a = list[pc_[d]];
    bool ok = false;
    int waiting = -1;
    ready_time(a, &ok, &waiting);
    Stall st;
    st.device = d;
    st.list_index = pc_[d];
    if (ok) {
      // Inputs are ready and no event is pending, so only memory can hold it (F).
      st.kind = Stall::Kind::kForwardMemory;
      st.needed = inst_.stages[a.stage].activation;
      st.free = std::max(0.0, inst_.devices[d].memory_limit - mem_[d]);
    }
    out.push_back(st);
  }
  for (int g = 0; g < G_; ++g) {
    const Channel& ch = h2d_[g];
    if (ch.busy || ch.head >= ch.queue.size()) continue;
    const Request& req = ch.queue[ch.head];
    Stall st;
    st.device = req.device;
    st.list_index = req.list_index;
    if (!known(off_end_[req.sj])) {
      st.kind = Stall::Kind::kReloadOffload;
    } else {
      st.kind = Stall::Kind::kReloadMemory;
      st.needed = req.bytes;
      st.free = std::max(0.0, inst_.devices[req.device].memory_limit - mem_[req.device]);
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
    const Action& a = sch_->devices[st.device][st.list_index];
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

}  // namespace optpipe
