// A copy stream of the CPU backend (issue 7): a worker thread that runs its jobs one at a time
// in the order they were queued, like a CUDA stream (the spec's D2H and H2D channels serve
// their requests strictly in order). An exception in a job is kept and rethrown by the next
// submit() or drain(), so a failed copy is never lost.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace optpipe::runtime {

class CopyStream {
 public:
  CopyStream();
  ~CopyStream();
  CopyStream(const CopyStream&) = delete;
  CopyStream& operator=(const CopyStream&) = delete;

  void submit(std::function<void()> job);
  // Waits until every queued job ran; rethrows the first failure.
  void drain();

 private:
  void loop();
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool busy_ = false, stop_ = false;
  std::exception_ptr error_;
  std::thread worker_;
};

}  // namespace optpipe::runtime
