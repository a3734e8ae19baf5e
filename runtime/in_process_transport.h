// Transport (transport.h) between threads of one process: one thread per device, messages
// through a shared hub. Sends are buffered (the hub copies the data), so they complete at once;
// a receive waits on the hub's condition variable. Used by the tests and by `optpipe train
// --backend threads`; it runs the same executor core as the MPI backend.
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/transport.h"

namespace optpipe::runtime {

class InProcessHub {
 public:
  explicit InProcessHub(int ranks) : ranks_(ranks) {}
  int ranks() const { return ranks_; }
  // The transport of `rank` (0 <= rank < ranks); the hub must outlive it.
  std::unique_ptr<Transport> transport(int rank);

 private:
  friend class InProcessTransport;
  int ranks_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::tuple<int, int, int>, std::deque<std::vector<char>>> mail_;  // (from, to, tag)
  std::string aborted_;                                                     // why, once a rank failed
};

}  // namespace optpipe::runtime
