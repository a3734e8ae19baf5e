#include "cli/stop_signal.h"

#include <csignal>

namespace optpipe::cli {
namespace {

std::atomic<bool> g_stop{false};

extern "C" void on_stop_request(int) { g_stop.store(true); }

}  // namespace

StopSignalGuard::StopSignalGuard() {
  g_stop.store(false);
  int_ = std::signal(SIGINT, on_stop_request);
  term_ = std::signal(SIGTERM, on_stop_request);
}

StopSignalGuard::~StopSignalGuard() {
  std::signal(SIGINT, int_);
  std::signal(SIGTERM, term_);
}

const std::atomic<bool>* StopSignalGuard::flag() const { return &g_stop; }

}  // namespace optpipe::cli
