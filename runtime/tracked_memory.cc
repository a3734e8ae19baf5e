#include "runtime/tracked_memory.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <stdexcept>

namespace optpipe::runtime {

void TrackedMemory::allocate(double bytes, double timeout_s, const std::string& what) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (used_ + bytes > limit_) {
    if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && used_ + bytes > limit_) {
      char buf[160];
      std::snprintf(buf, sizeof buf, ": %.0f bytes in use + %.0f needed > limit %.0f, nothing freed them for %.0f s",
                    used_, bytes, limit_, timeout_s);
      throw std::runtime_error(what + buf);
    }
  }
  used_ += bytes;
  peak_ = std::max(peak_, used_);
}

void TrackedMemory::allocate_in_order(double bytes, int ticket, double timeout_s, const std::string& what) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (next_ticket_ != ticket || used_ + bytes > limit_) {
    if (cv_.wait_until(lock, deadline) == std::cv_status::timeout &&
        (next_ticket_ != ticket || used_ + bytes > limit_)) {
      char buf[200];
      if (next_ticket_ != ticket) {
        std::snprintf(buf, sizeof buf, ": allocation %d of the iteration still waits for allocation %d after %.0f s",
                      ticket, next_ticket_, timeout_s);
      } else {
        std::snprintf(buf, sizeof buf, ": %.0f bytes in use + %.0f needed > limit %.0f, nothing freed them for %.0f s",
                      used_, bytes, limit_, timeout_s);
      }
      throw std::runtime_error(what + buf);
    }
  }
  used_ += bytes;
  peak_ = std::max(peak_, used_);
  ++next_ticket_;
  lock.unlock();
  cv_.notify_all();
}

void TrackedMemory::restart_order() {
  std::lock_guard<std::mutex> lock(mu_);
  next_ticket_ = 0;
}

void TrackedMemory::release(double bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    used_ -= bytes;
  }
  cv_.notify_all();
}

double TrackedMemory::used() const {
  std::lock_guard<std::mutex> lock(mu_);
  return used_;
}

double TrackedMemory::peak() const {
  std::lock_guard<std::mutex> lock(mu_);
  return peak_;
}

}  // namespace optpipe::runtime
