// Ctrl-C and SIGTERM as a stop request for a long command: while a StopSignalGuard lives, either
// signal sets its flag (solve_pipeline's PipelineOptions::stop reads it), and the previous
// handlers come back when it goes. One guard at a time.
#pragma once

#include <atomic>

namespace optpipe::cli {

class StopSignalGuard {
 public:
  StopSignalGuard();
  ~StopSignalGuard();
  StopSignalGuard(const StopSignalGuard&) = delete;
  StopSignalGuard& operator=(const StopSignalGuard&) = delete;

  // Set by the signals; false when the guard starts.
  const std::atomic<bool>* flag() const;

 private:
  void (*int_)(int);
  void (*term_)(int);
};

}  // namespace optpipe::cli
