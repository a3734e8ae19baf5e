#include "runtime/executor.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cmath>
#include <condition_variable>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "model/error.h"
#include "runtime/copy_stream.h"
#include "runtime/cpu_backend.h"
#include "runtime/shared_channels.h"
#include "runtime/tracked_memory.h"

namespace optpipe::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// The buffers and per-iteration state of one (stage, microbatch) of this device.
struct Slot {
  void *input = nullptr, *output = nullptr, *keep_b = nullptr, *keep_w = nullptr, *grad_in = nullptr,
       *grad_out = nullptr, *host = nullptr;  // from the backend: device buffers, host for offloads
  StageShapes shape;
  double r = 0;  // offload fraction this iteration
  bool offloaded = false, reloaded = false;
  Transport::Request recv_input = 0, recv_grad = 0;
};

// The bytes of a slot's kept activation that an offload at level r moves (the first ones).
std::size_t offloaded_bytes(const Slot& x, double r) {
  return static_cast<std::size_t>(std::floor(r * static_cast<double>(x.shape.keep_for_b)));
}

std::string op_name(char type, int s, int j) {
  return std::string(1, type) + std::to_string(s) + "." + std::to_string(j);
}

// A transfer's turn on a shared channel, released when the transfer is done (or failed).
class ChannelTurn {
 public:
  ChannelTurn(SharedChannels* channels, bool d2h, int group, int iteration, int ticket, double timeout_s,
              const std::string& what)
      : channels_(group >= 0 ? channels : nullptr), d2h_(d2h), group_(group) {
    if (channels_) channels_->acquire(d2h, group, iteration, ticket, timeout_s, what);
  }
  ~ChannelTurn() {
    if (channels_) channels_->release(d2h_, group_);
  }
  ChannelTurn(const ChannelTurn&) = delete;
  ChannelTurn& operator=(const ChannelTurn&) = delete;

 private:
  SharedChannels* channels_;
  bool d2h_;
  int group_;
};

class DeviceRun {
 public:
  DeviceRun(const Instance& inst, const DeviceProgram& program, const std::vector<StageModel*>& models, Transport& t,
            DeviceBackend& backend, const ExecutorOptions& opt)
      : inst_(inst), prog_(program), models_(models), t_(t), be_(backend), opt_(opt), d_(program.device),
        memory_(inst.devices[static_cast<std::size_t>(program.device)].static_memory,
                inst.devices[static_cast<std::size_t>(program.device)].memory_limit) {
    const int S = inst.num_stages();
    if (static_cast<int>(models_.size()) != S) throw std::invalid_argument("run_device: one model entry per stage");
    synthetic_ = true;
    for (int s = 0; s < S; ++s) {
      if (inst.stages[static_cast<std::size_t>(s)].device == d_ && models_[static_cast<std::size_t>(s)]) synthetic_ = false;
    }
    for (int s = 0; s < S; ++s) {
      if (inst.stages[static_cast<std::size_t>(s)].device != d_) continue;
      if (!synthetic_ && !models_[static_cast<std::size_t>(s)]) {
        throw std::invalid_argument("run_device: stage " + std::to_string(s) + " on device " + std::to_string(d_) +
                                    " has no model while others do");
      }
      StageShapes sh{8, 8, 0, 0};
      if (!synthetic_) sh = models_[static_cast<std::size_t>(s)]->shapes();
      shapes_[s] = sh;
      for (int j = 0; j < inst.microbatches; ++j) {
        Slot& x = slots_[{s, j}];
        x.shape = sh;
        x.input = be_.device_buffer(sh.input_bytes);
        x.output = be_.device_buffer(sh.output_bytes);
        x.keep_b = be_.device_buffer(sh.keep_for_b);
        x.keep_w = be_.device_buffer(sh.keep_for_w);
        x.grad_in = be_.device_buffer(sh.input_bytes);
        x.grad_out = be_.device_buffer(sh.output_bytes);
        x.host = be_.host_buffer(sh.keep_for_b);
      }
    }
  }

  DeviceReport run() {
    DeviceReport rep;
    rep.device = d_;
    for (int it = 0; it < opt_.iterations; ++it) {
      if (opt_.synchronize_iterations) barrier();
      if (opt_.before_iteration) {
        if (std::optional<DeviceProgram> next = opt_.before_iteration(it, t_)) {
          if (next->device != d_) throw std::logic_error("a schedule switch gave device " + std::to_string(d_) +
                                                         " the program of device " + std::to_string(next->device));
          prog_ = std::move(*next);
          rep.switch_iterations.push_back(it);
        }
      }
      const auto t0 = Clock::now();
      iteration(it, rep);
      rep.iteration_seconds.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }
    rep.peak_bytes = memory_.peak();
    return rep;
  }

 private:
  const Instance& inst_;
  DeviceProgram prog_;  // a copy: a schedule switch replaces it between iterations
  const std::vector<StageModel*>& models_;
  Transport& t_;
  DeviceBackend& be_;
  const ExecutorOptions& opt_;
  int d_;
  bool synthetic_ = true;
  TrackedMemory memory_;
  std::map<int, StageShapes> shapes_;
  std::map<std::pair<int, int>, Slot> slots_;
  std::mutex mu_;  // guards the offloaded / reloaded flags
  std::condition_variable cv_;

  Slot& slot(int s, int j) { return slots_.at({s, j}); }
  StageModel* model(int s) const { return models_[static_cast<std::size_t>(s)]; }
  const Stage& stage(int s) const { return inst_.stages[static_cast<std::size_t>(s)]; }
  bool same_device(int s) const { return s >= 0 && s < inst_.num_stages() && stage(s).device == d_; }

  void barrier() {
    t_.gather({}, opt_.timeout_s);
    std::vector<char> go(1, 1);
    t_.broadcast(go, opt_.timeout_s);
  }

  // Synthetic mode: the op or copy takes the instance's time, scaled.
  void busy(double instance_ms) const {
    if (!synthetic_ || instance_ms <= 0) return;
    std::this_thread::sleep_until(Clock::now() + std::chrono::duration<double, std::milli>(instance_ms * opt_.time_scale));
  }

  void wait_flag(bool Slot::*flag, int s, int j, const std::string& what) {
    std::unique_lock<std::mutex> lock(mu_);
    Slot& x = slot(s, j);
    if (!cv_.wait_for(lock, std::chrono::duration<double>(opt_.timeout_s), [&] { return x.*flag; })) {
      throw std::runtime_error("device " + std::to_string(d_) + ": " + what + " did not happen within " +
                               std::to_string(opt_.timeout_s) + " s");
    }
  }
  void set_flag(bool Slot::*flag, int s, int j) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      slot(s, j).*flag = true;
    }
    cv_.notify_all();
  }

  [[noreturn]] void fail_on_purpose(int it, const Step& st) const {
    const std::string where = "device " + std::to_string(d_) + ": failure drill ($OPTPIPE_FAULT) at iteration " +
                              std::to_string(it) + ", step " + std::to_string(opt_.fault.step) + " (stage " +
                              std::to_string(st.stage) + ", microbatch " + std::to_string(st.mb) + ")";
    if (opt_.fault.kind == FaultDrill::Kind::kKill) {
      std::fprintf(stderr, "optpipe: %s: killing this process\n", where.c_str());
      std::fflush(stderr);
      std::raise(SIGKILL);
    }
    throw std::runtime_error(where);
  }

  // What one iteration has in flight besides compute: its sends and the two copy streams.
  struct InFlight {
    std::vector<Transport::Request> sends;
    CopyStream d2h, h2d;
  };

  void iteration(int it, DeviceReport& rep) {
    begin_iteration(it);
    InFlight io;
    int step_index = 0;
    for (const Step& st : prog_.steps) {
      if (opt_.fault.device == d_ && opt_.fault.iteration == it && opt_.fault.step == step_index) fail_on_purpose(it, st);
      ++step_index;
      execute(st, it, rep, io);
    }
    end_iteration(rep, io);
  }

  // Fresh flags and models; every receive of the iteration, posted up front.
  void begin_iteration(int it) {
    memory_.restart_order();
    for (auto& [key, x] : slots_) {
      x.r = 0;
      x.offloaded = x.reloaded = false;
    }
    for (const auto& [s, sh] : shapes_) {
      if (!synthetic_) model(s)->begin_iteration(it);
    }
    for (const Step& r : prog_.receives) {
      Slot& x = slot(r.stage, r.mb);
      if (r.op == Instr::kWaitInput) {
        x.recv_input = t_.irecv(r.peer, message_tag(inst_, 0, r.stage - 1, r.mb, it), x.input, x.shape.input_bytes);
      } else {
        x.recv_grad = t_.irecv(r.peer, message_tag(inst_, 1, r.stage + 1, r.mb, it), x.grad_out, x.shape.output_bytes);
      }
    }
  }

  void execute(const Step& st, int it, DeviceReport& rep, InFlight& io) {
    const int s = st.stage, j = st.mb;
    Slot& x = slot(s, j);
    switch (st.op) {
      case Instr::kWaitInput:
        t_.wait(x.recv_input, opt_.timeout_s, "activation " + op_name('F', s - 1, j));
        break;
      case Instr::kForward:
        forward(st);
        break;
      case Instr::kSendOutput:
        io.sends.push_back(t_.isend(st.peer, message_tag(inst_, 0, s, j, it), x.output, x.shape.output_bytes));
        break;
      case Instr::kStartOffload:
        start_offload(st, it, rep, io.d2h);
        break;
      case Instr::kIssueReload:
        issue_reload(st, it, rep, io.h2d);
        break;
      case Instr::kWaitGrad:
        t_.wait(x.recv_grad, opt_.timeout_s, "gradient " + op_name('B', s + 1, j));
        break;
      case Instr::kWaitReload:
        if (x.r > 0) wait_flag(&Slot::reloaded, s, j, "the reload of " + op_name('F', s, j));
        break;
      case Instr::kBackward:
        backward(st);
        break;
      case Instr::kSendGrad:
        io.sends.push_back(t_.isend(st.peer, message_tag(inst_, 1, s, j, it), x.grad_in, x.shape.input_bytes));
        break;
      case Instr::kWeight:
        if (!synthetic_) {
          model(s)->backward_weight(j, x.keep_w);
          be_.compute_issued();
        }
        busy(stage(s).weight);
        memory_.release(stage(s).weight_activation);
        break;
    }
  }

  void forward(const Step& st) {
    const int s = st.stage, j = st.mb;
    Slot& x = slot(s, j);
    const Stage& sg = stage(s);
    memory_.allocate_in_order(sg.activation, st.ticket, opt_.timeout_s,
                              "device " + std::to_string(d_) + ": " + op_name('F', s, j) + " waits for memory");
    x.r = st.r;
    if (!synthetic_) {
      const void* in = s == 0 ? nullptr : same_device(s - 1) ? slot(s - 1, j).output : x.input;
      model(s)->forward(j, in, x.output, x.keep_b);
      be_.compute_issued();
    }
    busy(sg.forward);
  }

  void backward(const Step& st) {
    const int s = st.stage, j = st.mb;
    Slot& x = slot(s, j);
    const Stage& sg = stage(s);
    const bool split = inst_.split_backward;
    if (!synthetic_) {
      const void* gout = s == inst_.num_stages() - 1 ? nullptr : same_device(s + 1) ? slot(s + 1, j).grad_in : x.grad_out;
      model(s)->backward_input(j, x.keep_b, gout, x.grad_in, x.keep_w);
      if (!split) model(s)->backward_weight(j, x.keep_w);
      be_.compute_issued();
    }
    busy(split ? sg.backward : sg.backward + sg.weight);
    memory_.release(split ? sg.activation - sg.weight_activation : sg.activation);
  }

  void start_offload(const Step& st, int it, DeviceReport& rep, CopyStream& d2h) {
    const int s = st.stage, j = st.mb;
    const double r = st.r;
    const int channel = st.channel, channel_ticket = st.channel_ticket;
    d2h.submit([this, s, j, r, it, channel, channel_ticket, &rep] {
      ChannelTurn turn(opt_.channels, true, channel, it, channel_ticket, opt_.timeout_s,
                       "device " + std::to_string(d_) + ": the offload of " + op_name('F', s, j));
      Slot& y = slot(s, j);
      const std::size_t n = offloaded_bytes(y, r);
      if (n > 0) be_.copy_to_host(y.host, y.keep_b, n);
      if (opt_.poison_offloaded && n > 0 && !synthetic_) be_.poison(y.keep_b, n, first_model()->dtype());
      busy(r * stage(s).offload.value_or(0.0));
      memory_.release(r * stage(s).activation);
      ++rep.offloads;
      set_flag(&Slot::offloaded, s, j);
    });
  }

  void issue_reload(const Step& st, int it, DeviceReport& rep, CopyStream& h2d) {
    const int s = st.stage, j = st.mb;
    const double r = slot(s, j).r;
    const int ticket = st.ticket, channel = st.channel, channel_ticket = st.channel_ticket;
    h2d.submit([this, s, j, r, ticket, it, channel, channel_ticket, &rep] {
      // Holds the channel while it waits for its offload and for room (spec §4).
      ChannelTurn turn(opt_.channels, false, channel, it, channel_ticket, opt_.timeout_s,
                       "device " + std::to_string(d_) + ": the reload of " + op_name('F', s, j));
      wait_flag(&Slot::offloaded, s, j, "the offload of " + op_name('F', s, j));
      memory_.allocate_in_order(r * stage(s).activation, ticket, opt_.timeout_s,
                                "device " + std::to_string(d_) + ": the reload of " + op_name('F', s, j) +
                                    " waits for memory");
      Slot& y = slot(s, j);
      busy(r * stage(s).reload.value_or(0.0));
      const std::size_t n = offloaded_bytes(y, r);
      if (n > 0) be_.copy_to_device(y.keep_b, y.host, n);
      ++rep.reloads;
      set_flag(&Slot::reloaded, s, j);
    });
  }

  // Drains the copies and sends, checks the memory account, records the loss.
  void end_iteration(DeviceReport& rep, InFlight& io) {
    const int S = inst_.num_stages();
    io.d2h.drain();
    io.h2d.drain();
    be_.synchronize();
    for (Transport::Request q : io.sends) t_.wait(q, opt_.timeout_s, "a send to a neighbouring device");
    const double left = memory_.used() - inst_.devices[static_cast<std::size_t>(d_)].static_memory;
    if (std::fabs(left) > 1.0 + 1e-9 * inst_.devices[static_cast<std::size_t>(d_)].memory_limit) {
      throw std::logic_error("device " + std::to_string(d_) + ": " + std::to_string(left) +
                             " activation bytes still accounted at the end of the iteration");
    }
    if (!synthetic_) {
      if (same_device(S - 1)) {
        double sum = 0;
        for (int j = 0; j < inst_.microbatches; ++j) sum += model(S - 1)->loss_of(slot(S - 1, j).output);
        rep.losses.push_back(sum / inst_.microbatches);
      }
      for (const auto& [s, sh] : shapes_) model(s)->end_iteration();
    }
  }

  StageModel* first_model() const {
    for (StageModel* m : models_) {
      if (m) return m;
    }
    return nullptr;
  }
};

}  // namespace

FaultDrill parse_fault_drill(const std::string& text) {
  FaultDrill f;
  bool have_device = false;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string part = text.substr(at, comma - at);
    at = comma + 1;
    const std::size_t eq = part.find('=');
    const std::string key = part.substr(0, eq), value = eq == std::string::npos ? "" : part.substr(eq + 1);
    const auto bad = [&](const std::string& why) {
      return InputError("$OPTPIPE_FAULT: \"" + part + "\": " + why +
                        " (expected device=D[,iteration=I][,step=K][,kind=throw|kill])");
    };
    if (key == "kind") {
      if (value != "throw" && value != "kill") throw bad("kind must be throw or kill");
      f.kind = value == "kill" ? FaultDrill::Kind::kKill : FaultDrill::Kind::kThrow;
      continue;
    }
    int n = -1;
    const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (ec != std::errc() || ptr != value.data() + value.size() || n < 0) throw bad("needs a whole number >= 0");
    if (key == "device") {
      f.device = n;
      have_device = true;
    } else if (key == "iteration") {
      f.iteration = n;
    } else if (key == "step") {
      f.step = n;
    } else {
      throw bad("unknown key");
    }
  }
  if (!have_device) throw InputError("$OPTPIPE_FAULT: \"" + text + "\": needs device=D");
  return f;
}

DeviceReport run_device(const Instance& instance, const DeviceProgram& program, const std::vector<StageModel*>& models,
                        Transport& transport, const ExecutorOptions& options) {
  const std::unique_ptr<DeviceBackend> cpu = make_cpu_backend();
  return run_device(instance, program, models, transport, *cpu, options);
}

DeviceReport run_device(const Instance& instance, const DeviceProgram& program, const std::vector<StageModel*>& models,
                        Transport& transport, DeviceBackend& backend, const ExecutorOptions& options) {
  try {
    DeviceRun run(instance, program, models, transport, backend, options);
    return run.run();
  } catch (const std::exception& e) {
    transport.abort(e.what());
    throw;
  }
}

}  // namespace optpipe::runtime
