#include "plan/cutoff_solve.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "solve/solve_observer.h"

namespace optpipe::plan {
namespace {

class CutoffObserver : public SolveObserver {
 public:
  CutoffObserver(double cutoff, std::atomic<bool>& stop, std::atomic<bool>& cut)
      : cutoff_(cutoff), stop_(stop), cut_(cut) {}
  void on_root_bound(double bound) override { check(bound); }
  void on_progress(const SolveProgress& p) override { check(p.bound); }

 private:
  void check(double bound) {
    if (bound >= cutoff_) {
      cut_ = true;
      stop_ = true;
    }
  }
  double cutoff_;
  std::atomic<bool>& stop_;
  std::atomic<bool>& cut_;
};

// Sets `stop` when the caller's flag is set, polling every 20 ms, until destroyed.
class StopForwarder {
 public:
  StopForwarder(const std::atomic<bool>* outer, std::atomic<bool>& stop)
      : thread_([this, outer, &stop] {
          std::unique_lock<std::mutex> lock(mu_);
          while (!cv_.wait_for(lock, std::chrono::milliseconds(20), [this] { return done_; })) {
            if (outer && outer->load()) stop = true;
          }
        }) {}
  ~StopForwarder() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  StopForwarder(const StopForwarder&) = delete;
  StopForwarder& operator=(const StopForwarder&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;  // last: starts after the members it uses
};

}  // namespace

CutoffResult solve_with_cutoff(const Instance& instance, PipelineOptions options, double cutoff) {
  std::atomic<bool> stop{false}, cut{false};
  const StopForwarder forwarder(options.stop, stop);
  options.stop = &stop;
  CutoffObserver observer(cutoff, stop, cut);
  CutoffResult r;
  r.pipeline = solve_pipeline(instance, options, observer);
  r.cut = cut;
  return r;
}

}  // namespace optpipe::plan
