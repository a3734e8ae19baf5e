#include "cli/cmd_train.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

#include "cli/exit_codes.h"
#include "cli/validators.h"
#include "model/error.h"
#include "model/instance_io.h"
#include "cache/cache_lookup.h"
#include "cache/schedule_cache.h"
#include "online/online.h"
#include "model/schedule_io.h"
#include "heuristics/registry.h"
#include "runtime/cuda_backend.h"
#include "runtime/mpi_transport.h"
#include "runtime/train.h"

namespace optpipe::cli {
namespace {

struct TrainArgs {
  std::string instance, schedule, backend = "cpu", dtype = "double", optimizer = "adam";
  int iterations = 10, width = 32, rows = 8, layers = 2;
  double lr = 0, timeout = 60, time_scale = 1.0;  // lr 0: the optimizer's default
  unsigned long long seed = 1;
  bool synthetic = false;
  bool online = false, wait_for_solver = false;
  int profile_iterations = 2;
  double switch_threshold = 0.02, solver_time = 10;
};

std::string gib(double bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f GiB", bytes / 1073741824.0);
  return b;
}

// Without a schedule file: the cache's schedule for the instance (exact or near hit, fitted),
// else the best heuristic's. Prints which. Under mpirun every rank chooses for itself, so only
// the deterministic heuristics are used there: a cache that another job writes meanwhile could
// answer the ranks differently.
Schedule starting_schedule(const Instance& inst) {
  const std::string path = runtime::launched_by_mpirun() ? std::string() : cache::default_cache_path();
  if (!path.empty()) {
    try {
      cache::ScheduleCache store(path);
      const cache::LookupResult hit = cache::lookup(store, inst, cache::signature(inst));
      if (hit.schedule) {
        std::fprintf(stderr, "train: starting from the cached schedule (%s, %s)\n", cache::to_string(hit.kind),
                     path.c_str());
        return *hit.schedule;
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "train: cache %s not used: %s\n", path.c_str(), e.what());
    }
  }
  const BestResult best = run_all_heuristics(inst);
  const HeuristicResult* b = best.best_result();
  if (!b) throw InputError("no schedule given and no heuristic schedule fits " + inst.name + ": give a SCHEDULE");
  std::fprintf(stderr, "train: starting from the best heuristic, %s\n", b->title.c_str());
  return *b->schedule;
}

// The run's options from the flags. The plugins a run needs are loaded here, before anything
// starts, so that a missing one is a clear input error: CUDA for --backend cuda, MPI under
// mpirun (never for threads).
runtime::TrainOptions train_options(const TrainArgs& a) {
  runtime::TrainOptions o;
  std::string why;
  if (a.backend == "cuda" && !runtime::have_cuda_backend(&why)) {
    throw InputError("--backend cuda: " + why + "; use --backend cpu");
  }
  o.backend = runtime::launched_by_mpirun() ? "mpi" : "threads";
  if (o.backend == "mpi" && !runtime::have_mpi(&why)) throw InputError("train under mpirun: " + why);
  o.device = a.backend;
  o.synthetic = a.synthetic;
  o.executor.iterations = a.iterations;
  o.executor.timeout_s = a.timeout;
  o.executor.time_scale = a.time_scale;
  if (const char* fault = std::getenv("OPTPIPE_FAULT"); fault && *fault) {
    o.executor.fault = runtime::parse_fault_drill(fault);  // a failure drill (executor.h)
  }
  o.model.dtype = a.dtype == "float" ? runtime::DType::kFloat32 : runtime::DType::kFloat64;
  o.model.width = a.width;
  o.model.rows = a.rows;
  o.model.layers_per_stage = a.layers;
  o.model.learning_rate = a.lr;
  o.model.optimizer = a.optimizer == "sgd" ? runtime::MlpConfig::kSgd : runtime::MlpConfig::kAdam;
  o.model.seed = a.seed;
  if (a.online) {
    runtime::OnlineOptions on;
    on.profile_iterations = a.profile_iterations;
    on.switch_threshold = a.switch_threshold;
    on.solver_seconds = a.solver_time;
    on.wait_for_solver = a.wait_for_solver;
    o.online = runtime::online_rescheduling(on);
  }
  return o;
}

// Online re-scheduling: its log, and per switch the predicted and measured iteration times.
void print_switches(const runtime::TrainResult& r) {
  for (const auto& line : r.online_log) std::cout << "online: " << line << "\n";
  if (r.switches.empty()) std::cout << "online: no schedule switch\n";
  for (const auto& sw : r.switches) {
    double before = 0, after = 0;
    int nb = 0, na = 0;
    for (std::size_t i = 0; i < r.iteration_seconds.size(); ++i) {
      if (static_cast<int>(i) < sw.iteration) before += r.iteration_seconds[i], ++nb;
      else after += r.iteration_seconds[i], ++na;
    }
    std::printf("online: switched at iteration %d: predicted %.4f -> %.4f ms on the profiled instance; measured "
                "%.3f ms per iteration before, %.3f ms after\n",
                sw.iteration, sw.predicted_before, sw.predicted_after, nb ? 1000 * before / nb : 0.0,
                na ? 1000 * after / na : 0.0);
  }
}

// The median iteration time against the simulated makespan, then each device's peak memory.
void print_times_and_memory(const TrainArgs& a, const Instance& inst, const runtime::TrainResult& r) {
  std::vector<double> sorted = r.iteration_seconds;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted.empty() ? 0 : sorted[sorted.size() / 2];
  if (a.synthetic) {
    const double expected = r.simulated_makespan * a.time_scale;
    std::printf("iteration time: median %.3f ms, simulated makespan %.3f ms x time scale %g = %.3f ms (%+.1f%%)\n",
                1000 * median, r.simulated_makespan, a.time_scale, expected,
                expected > 0 ? 100 * (1000 * median - expected) / expected : 0.0);
  } else {
    std::printf("iteration time: median %.3f ms (the instance's simulated makespan: %.3f ms)\n", 1000 * median,
                r.simulated_makespan);
  }
  std::printf("%6s %16s %16s %16s %9s\n", "device", "peak (tracked)", "peak (simulated)", "limit", "offloads");
  for (const auto& d : r.devices) {
    std::printf("%6d %16s %16s %16s %9d\n", d.device, gib(d.peak_bytes).c_str(),
                gib(r.simulated_peak[static_cast<std::size_t>(d.device)]).c_str(),
                gib(inst.devices[static_cast<std::size_t>(d.device)].memory_limit).c_str(), d.offloads);
  }
}

void run_train(const TrainArgs& a) {
  const Instance inst = load_instance(a.instance);
  const Schedule sch = a.schedule.empty() ? starting_schedule(inst) : load_schedule(a.schedule);
  const runtime::TrainOptions o = train_options(a);
  runtime::TrainResult r;
  try {
    r = runtime::train(inst, sch, o);
  } catch (const InputError&) {
    throw;
  } catch (const std::runtime_error& e) {  // a device failed or a wait timed out: the run, not a bug
    throw RunFailed(std::string("train: ") + e.what());
  }
  if (!r.root) return;  // MPI ranks other than 0 print nothing
  std::cout << "train: " << inst.name << ", " << inst.num_devices() << " devices ("
            << (o.backend == "mpi" ? "MPI ranks" : "threads") << (o.device == "cuda" ? ", CUDA/NCCL" : "") << "), "
            << (a.synthetic ? "synthetic ops" : "MLP " + std::to_string(a.layers) + "x" + std::to_string(a.width) +
                                                    " per stage, " + a.dtype)
            << ", " << a.iterations << " iterations\n";
  std::printf("%9s %14s %14s\n", "iteration", "loss", "time (ms)");
  for (std::size_t i = 0; i < r.iteration_seconds.size(); ++i) {
    const std::string loss = i < r.losses.size() ? std::to_string(r.losses[i]) : "-";
    std::printf("%9zu %14s %14.3f\n", i, loss.c_str(), 1000 * r.iteration_seconds[i]);
  }
  if (a.online) print_switches(r);
  print_times_and_memory(a, inst, r);
}

}  // namespace

void add_train_command(CLI::App& app) {
  auto args = std::make_shared<TrainArgs>();
  auto* cmd = app.add_subcommand("train", "Run a schedule for real: the executor with a reference MLP (or sleeping ops)");
  cmd->add_option("INSTANCE", args->instance, "instance file")->required();
  cmd->add_option("SCHEDULE", args->schedule,
                  "schedule file (for this instance); default: the cached schedule, else the best heuristic's");
  cmd->add_option("--backend", args->backend,
                  "cpu (default): one MPI rank per device under mpirun, otherwise one thread per device; cuda: the "
                  "CUDA/NCCL backend")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--iterations", args->iterations, "training iterations (default 10)")->check(more_than(0));
  cmd->add_flag("--synthetic", args->synthetic,
                "no model: every op and copy sleeps for the instance's duration times --time-scale");
  cmd->add_option("--time-scale", args->time_scale,
                  "synthetic ops: wall milliseconds per instance millisecond (default 1)")
      ->check(at_least(0));
  cmd->add_option("--dtype", args->dtype, "double (default) or float")->check(CLI::IsMember({"double", "float"}));
  cmd->add_option("--width", args->width, "MLP width (default 32)")->check(more_than(0));
  cmd->add_option("--rows", args->rows, "samples per microbatch (default 8)")->check(more_than(0));
  cmd->add_option("--layers", args->layers, "layers per stage (default 2)")->check(more_than(0));
  cmd->add_option("--optimizer", args->optimizer, "adam (default) or sgd")->check(CLI::IsMember({"adam", "sgd"}));
  cmd->add_option("--lr", args->lr, "learning rate (default: the optimizer's, Adam 0.01, SGD 0.5)")
      ->check(more_than(0));
  cmd->add_option("--seed", args->seed, "data and initialisation seed (default 1)");
  cmd->add_flag("--online", args->online,
                "re-schedule while training: profile after --profile-iterations, solve in the background on rank 0, "
                "switch every rank to each schedule predicted faster by more than --switch-threshold");
  cmd->add_option("--profile-iterations", args->profile_iterations, "online: iterations before profiling (default 2)")
      ->check(at_least(0));
  cmd->add_option("--switch-threshold", args->switch_threshold,
                  "online: the predicted gain a switch needs, as a share (default 0.02)");
  cmd->add_option("--solver-time", args->solver_time, "online: the background solver's time limit in s (default 10)")
      ->check(more_than(0));
  cmd->add_flag("--wait-for-solver", args->wait_for_solver,
                "online: rank 0 waits for the solver at the first boundary after profiling (reproducible runs)");
  cmd->add_option("--timeout", args->timeout, "seconds any single wait may take before it is an error (default 60)")
      ->check(more_than(0));
  cmd->footer(
      "Examples:\n"
      "  optpipe train instances/uniform-4x8.json out/uniform.json --iterations 20\n"
      "  mpirun -np 4 optpipe train instances/uniform-4x8.json out/uniform.json --synthetic --time-scale 0.5\n"
      "Memory is accounted in the instance's bytes with the simulator's waits; the peaks are compared with the "
      "simulator's.");
  cmd->callback([args] {
    run_train(*args);
    throw CLI::Success();
  });
}

}  // namespace optpipe::cli
