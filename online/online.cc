#include "online/online.h"

#include <cstdio>

#include "model/error.h"
#include "model/schedule_io.h"
#include "solve/solve_pipeline.h"
#include "model/simulator.h"
#include "runtime/profiler.h"
#include "runtime/program.h"

namespace optpipe::runtime {

OnlineCoordinator::OnlineCoordinator(const Instance& instance, const Schedule& initial, const MlpConfig& model,
                                     OnlineOptions options)
    : inst_(instance), current_(initial), model_(model), opt_(options) {}

OnlineCoordinator::~OnlineCoordinator() { finish(); }

void OnlineCoordinator::finish() {
  stop_.store(true);
  if (solver_.joinable()) solver_.join();
}

std::vector<std::string> OnlineCoordinator::log() const {
  std::lock_guard<std::mutex> lock(mu_);
  return log_;
}

void OnlineCoordinator::solve_in_background() {
  auto note = [this](const std::string& line) {
    std::lock_guard<std::mutex> lock(mu_);
    log_.push_back(line);
  };
  try {
    Instance measured = inst_;
    if (!opt_.synthetic) {
      ProfileOptions po;
      po.warmup = 1;
      po.repeats = 5;
      measured = profile_mlp(inst_, model_, po);
      // What the running instance allows stays so: no offload where it has none.
      measured.offload_levels = inst_.offload_levels;
      for (std::size_t s = 0; s < measured.stages.size(); ++s) {
        if (!inst_.stages[s].offloadable()) measured.stages[s].offload.reset(), measured.stages[s].reload.reset();
      }
    }
    Schedule running;
    {
      std::lock_guard<std::mutex> lock(mu_);
      running = current_;
    }
    const double before = simulate(measured, running).makespan;
    // The whole solve (heuristics, local search, search) on one thread, warm-started from the
    // running schedule, as `optpipe solve` does it (solve/solve_pipeline.h), without the cache.
    PipelineOptions po;
    po.time_limit = opt_.solver_seconds;
    po.threads = 1;
    po.stop = &stop_;
    po.warm_starts = {running};
    const SolveResult r = solve_pipeline(measured, po).result;
    if (!r.schedule) {
      note("solver: no schedule (" + r.reason + ")");
      return;
    }
    char buf[200];
    std::snprintf(buf, sizeof buf, "solver: %s, %.4f ms on the measured instance (the running schedule: %.4f ms)",
                  to_string(r.status), r.makespan, before);
    note(buf);
    Schedule found = *r.schedule;
    found.instance = inst_.name;  // solved on the measured copy of the running instance
    try {
      lower_schedule(inst_, found);  // must run under the instance's memory accounting
    } catch (const InputError& e) {
      note(std::string("solver's schedule not taken: ") + e.what());
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    candidate_ = found;
    predicted_current_ = before;
    predicted_candidate_ = r.makespan;
  } catch (const std::exception& e) {
    note(std::string("online solver failed (training goes on): ") + e.what());
  }
}

std::string OnlineCoordinator::decide(int iteration) {
  if (!started_ && iteration >= opt_.profile_iterations) {
    started_ = true;
    solver_ = std::thread([this] { solve_in_background(); });
  }
  if (started_ && opt_.wait_for_solver && !waited_) {
    waited_ = true;
    if (solver_.joinable()) solver_.join();
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!candidate_) return "";
  const Schedule next = std::move(*candidate_);
  candidate_.reset();
  const double gain = predicted_current_ > 0 ? (predicted_current_ - predicted_candidate_) / predicted_current_ : 0;
  if (!(gain > opt_.switch_threshold)) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "kept the running schedule: the solver's is %.2f%% faster, the threshold is %.2f%%",
                  100 * gain, 100 * opt_.switch_threshold);
    log_.push_back(buf);
    return "";
  }
  switches_.push_back({iteration, predicted_current_, predicted_candidate_});
  current_ = next;
  return schedule_to_text(next);
}

SwitcherFactory online_rescheduling(OnlineOptions options) {
  return [options](const Instance& instance, const Schedule& initial, const MlpConfig& model, bool synthetic) {
    OnlineOptions o = options;
    o.synthetic = synthetic;
    return std::make_unique<OnlineCoordinator>(instance, initial, model, o);
  };
}

}  // namespace optpipe::runtime
