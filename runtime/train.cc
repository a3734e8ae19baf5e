#include "runtime/train.h"

#include <algorithm>
#include <exception>
#include <mutex>
#include <thread>

#include "model/error.h"
#include "model/schedule_io.h"
#include "model/simulator.h"
#include "runtime/cpu_backend.h"
#include "runtime/cuda_backend.h"
#include "runtime/in_process_transport.h"
#include "runtime/mpi_transport.h"
#include "runtime/program.h"
#include "runtime/shared_channels.h"

namespace optpipe::runtime {
namespace {

std::vector<double> pack(const DeviceReport& r) {
  // [device, peak, offloads, reloads, n, seconds..., k, losses...]
  std::vector<double> v{static_cast<double>(r.device), r.peak_bytes, static_cast<double>(r.offloads),
                        static_cast<double>(r.reloads), static_cast<double>(r.iteration_seconds.size())};
  v.insert(v.end(), r.iteration_seconds.begin(), r.iteration_seconds.end());
  v.push_back(static_cast<double>(r.losses.size()));
  v.insert(v.end(), r.losses.begin(), r.losses.end());
  v.push_back(static_cast<double>(r.switch_iterations.size()));
  for (int i : r.switch_iterations) v.push_back(i);
  return v;
}

DeviceReport unpack(const std::vector<double>& v) {
  DeviceReport r;
  std::size_t k = 0;
  auto next = [&] {
    if (k >= v.size()) throw TransportError("a device's report is truncated");
    return v[k++];
  };
  r.device = static_cast<int>(next());
  r.peak_bytes = next();
  r.offloads = static_cast<int>(next());
  r.reloads = static_cast<int>(next());
  const int n = static_cast<int>(next());
  for (int i = 0; i < n; ++i) r.iteration_seconds.push_back(next());
  const int m = static_cast<int>(next());
  for (int i = 0; i < m; ++i) r.losses.push_back(next());
  const int w = static_cast<int>(next());
  for (int i = 0; i < w; ++i) r.switch_iterations.push_back(static_cast<int>(next()));
  return r;
}

void summarise(const Instance& inst, TrainResult& res) {
  const int iters = res.devices.empty() ? 0 : static_cast<int>(res.devices.front().iteration_seconds.size());
  res.iteration_seconds.assign(static_cast<std::size_t>(iters), 0.0);
  for (const DeviceReport& r : res.devices) {
    for (int i = 0; i < iters && i < static_cast<int>(r.iteration_seconds.size()); ++i) {
      res.iteration_seconds[static_cast<std::size_t>(i)] =
          std::max(res.iteration_seconds[static_cast<std::size_t>(i)], r.iteration_seconds[static_cast<std::size_t>(i)]);
    }
    const int last_device = inst.stages.back().device;
    if (r.device == last_device) res.losses = r.losses;
  }
}

}  // namespace

MlpConfig model_config_for(const Instance& inst, const MlpConfig& base) {
  MlpConfig c = base;
  c.stages = inst.num_stages();
  c.microbatches = inst.microbatches;
  return c;
}

namespace {

// The first failure is the cause; the others are ranks that stopped because of it (a
// TransportError): rethrows the cause, else the first error.
void rethrow_first_cause(const std::vector<std::exception_ptr>& errors) {
  for (const auto& e : errors) {
    if (!e) continue;
    try {
      std::rethrow_exception(e);
    } catch (const TransportError&) {
      continue;
    } catch (...) {
      throw;
    }
  }
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

// One call of train(): the lowered programs, the model, online re-scheduling, and the two ways
// to run them (threads in this process; one MPI rank per device).
class TrainRun {
 public:
  TrainRun(const Instance& inst, const Schedule& schedule, const TrainOptions& opt)
      : inst_(inst), schedule_(schedule), opt_(opt),
        programs_(lower_schedule(inst, schedule)),  // InputError if it does not fit
        cfg_(model_config_for(inst, opt.model)) {
    Simulator sim(inst);
    const SimResult s = sim.run(schedule);
    res_.simulated_makespan = s.makespan;
    res_.simulated_peak = s.peak_memory;
    num_groups_ = s.num_groups;
    if (!opt.synthetic) validate_mlp_config(cfg_);
  }

  TrainResult run() {
    if (opt_.device == "cuda" && opt_.backend != "mpi") {
      throw InputError("--backend cuda runs one MPI rank per GPU: start it with mpirun -np " +
                       std::to_string(inst_.num_devices()));
    }
    if (opt_.backend == "threads") return run_threads();
    if (opt_.backend == "mpi") return run_mpi();
    throw InputError("unknown backend '" + opt_.backend + "' (threads or mpi)");
  }

 private:
  // Device d's stage models (none for synthetic ops), indexed by stage.
  void make_models(int d, DeviceBackend& be, std::vector<std::unique_ptr<StageModel>>& owned,
                   std::vector<StageModel*>& ptrs) const {
    const int S = inst_.num_stages();
    owned.clear();
    ptrs.assign(static_cast<std::size_t>(S), nullptr);
    if (opt_.synthetic) return;
    for (int s = 0; s < S; ++s) {
      if (inst_.stages[static_cast<std::size_t>(s)].device != d) continue;
      owned.push_back(be.make_model(cfg_, s));
      ptrs[static_cast<std::size_t>(s)] = owned.back().get();
    }
  }

  // Online re-scheduling: rank 0 decides at each iteration boundary, every rank follows.
  ExecutorOptions executor_options(int d) {
    ExecutorOptions eo = opt_.executor;
    if (!opt_.online) return eo;
    eo.before_iteration = [this, d](int it, Transport& t) -> std::optional<DeviceProgram> {
      std::string text;
      if (t.rank() == 0 && coordinator_) text = coordinator_->decide(it);
      std::vector<char> msg(text.begin(), text.end());
      t.broadcast(msg, opt_.executor.timeout_s);
      if (msg.empty()) return std::nullopt;
      return lower_schedule(inst_, parse_schedule(std::string(msg.begin(), msg.end())))[static_cast<std::size_t>(d)];
    };
    return eo;
  }
  void start_online() {  // on rank 0 only
    if (opt_.online) coordinator_ = opt_.online(inst_, schedule_, cfg_, opt_.synthetic);
  }
  void finish_online() {
    if (!coordinator_) return;
    coordinator_->finish();
    res_.switches = coordinator_->switches();
    res_.online_log = coordinator_->log();
  }

  // Device d on its own thread, over the in-process hub; its final parameters and gradients.
  void run_thread(int d, InProcessHub& hub, SharedChannels& channels) {
    std::unique_ptr<Transport> t = hub.transport(d);
    std::unique_ptr<DeviceBackend> be = make_cpu_backend();
    std::vector<std::unique_ptr<StageModel>> owned;
    std::vector<StageModel*> ptrs;
    make_models(d, *be, owned, ptrs);
    ExecutorOptions eo = executor_options(d);
    eo.channels = &channels;
    res_.devices[static_cast<std::size_t>(d)] = run_device(inst_, programs_[static_cast<std::size_t>(d)], ptrs, *t, *be, eo);
    for (int s = 0; s < inst_.num_stages(); ++s) {
      if (StageModel* m = ptrs[static_cast<std::size_t>(s)]) {
        res_.final_parameters[static_cast<std::size_t>(s)] = m->parameters();
        res_.final_gradients[static_cast<std::size_t>(s)] = m->gradients();
      }
    }
  }

  TrainResult run_threads() {
    const int D = inst_.num_devices(), S = inst_.num_stages();
    start_online();
    InProcessHub hub(D);
    SharedChannels channels(channel_counts(programs_, num_groups_));  // one process: groups share their channels
    res_.devices.resize(static_cast<std::size_t>(D));
    res_.final_parameters.resize(static_cast<std::size_t>(S));
    res_.final_gradients.resize(static_cast<std::size_t>(S));
    std::vector<std::exception_ptr> errors(static_cast<std::size_t>(D));
    std::vector<std::thread> threads;
    for (int d = 0; d < D; ++d) {
      threads.emplace_back([&, d] {
        try {
          run_thread(d, hub, channels);
        } catch (...) {
          errors[static_cast<std::size_t>(d)] = std::current_exception();
        }
      });
    }
    for (auto& th : threads) th.join();
    finish_online();
    rethrow_first_cause(errors);
    summarise(inst_, res_);
    return std::move(res_);
  }

  // CUDA: the GPU of this rank on its node, the NCCL transport over it (bootstrapped through
  // MPI); CPU: the MPI transport and host buffers. Destroyed in reverse order: transport first.
  TrainResult run_mpi() {
    const int D = inst_.num_devices(), S = inst_.num_stages();
    const int max_tag = message_tag(inst_, 1, S - 1, inst_.microbatches - 1, 1);
    std::unique_ptr<DeviceBackend> be;
    std::unique_ptr<Transport> t;
    if (opt_.device == "cuda") {
      try {
        be = make_cuda_backend(local_rank());
      } catch (const std::runtime_error& e) {
        throw InputError(std::string("--backend cuda: ") + e.what());
      }
      t = make_nccl_transport(*be, make_mpi_transport(max_tag), S, inst_.microbatches);
    } else {
      be = make_cpu_backend();
      t = make_mpi_transport(max_tag);
    }
    if (t->size() != D) {
      throw InputError("the instance has " + std::to_string(D) + " devices but mpirun started " +
                       std::to_string(t->size()) + " ranks (use mpirun -np " + std::to_string(D) + ")");
    }
    const int d = t->rank();
    if (d == 0) start_online();
    std::vector<std::unique_ptr<StageModel>> owned;
    std::vector<StageModel*> ptrs;
    make_models(d, *be, owned, ptrs);
    const DeviceReport mine = run_device(inst_, programs_[static_cast<std::size_t>(d)], ptrs, *t, *be, executor_options(d));
    finish_online();
    const auto all = t->gather(pack(mine), opt_.executor.timeout_s);
    res_.root = d == 0;
    for (const auto& v : all) res_.devices.push_back(unpack(v));
    if (res_.root) summarise(inst_, res_);
    return std::move(res_);
  }

  const Instance& inst_;
  const Schedule& schedule_;
  const TrainOptions& opt_;
  const std::vector<DeviceProgram> programs_;
  const MlpConfig cfg_;
  TrainResult res_;
  int num_groups_ = 0;
  std::unique_ptr<ScheduleSwitcher> coordinator_;
};

}  // namespace

TrainResult train(const Instance& inst, const Schedule& schedule, const TrainOptions& opt) {
  return TrainRun(inst, schedule, opt).run();
}

}  // namespace optpipe::runtime
