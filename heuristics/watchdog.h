// A stop flag with a deadline: a thread sets it once the time has passed or an outside flag (e.g.
// Ctrl-C) is set, so that long loops (local searches) need only poll one atomic.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace optpipe {

// Sets `stop` once `seconds` have passed (never for infinity) or `outside` is set (polled every
// 20 ms; null: none), unless it is destroyed first.
class Watchdog {
 public:
  Watchdog(double seconds, std::atomic<bool>& stop, const std::atomic<bool>* outside) {
    if (!std::isfinite(seconds) && !outside) return;
    using Clock = std::chrono::steady_clock;
    const Clock::time_point end =
        std::isfinite(seconds) ? Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                    std::chrono::duration<double>(std::max(0.0, seconds)))
                               : Clock::time_point::max();
    thread_ = std::thread([this, end, outside, &stop] {
      std::unique_lock<std::mutex> lock(mu_);
      while (!done_) {
        if ((outside && outside->load()) || Clock::now() >= end) {
          stop.store(true);
          return;
        }
        const auto next = std::min(end, Clock::now() + std::chrono::milliseconds(20));
        cv_.wait_until(lock, next, [&] { return done_; });
      }
    });
  }
  ~Watchdog() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace optpipe
