#include "runtime/copy_stream.h"

namespace optpipe::runtime {

CopyStream::CopyStream() : worker_([this] { loop(); }) {}

CopyStream::~CopyStream() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

void CopyStream::submit(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (error_) std::rethrow_exception(error_);
    jobs_.push_back(std::move(job));
  }
  cv_.notify_all();
}

void CopyStream::drain() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return (jobs_.empty() && !busy_) || error_; });
  if (error_) std::rethrow_exception(error_);
}

void CopyStream::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // stopping, nothing left
    std::function<void()> job = std::move(jobs_.front());
    jobs_.pop_front();
    busy_ = true;
    lock.unlock();
    try {
      job();
    } catch (...) {
      lock.lock();
      if (!error_) error_ = std::current_exception();
      jobs_.clear();
      busy_ = false;
      cv_.notify_all();
      continue;
    }
    lock.lock();
    busy_ = false;
    cv_.notify_all();
  }
}

}  // namespace optpipe::runtime
