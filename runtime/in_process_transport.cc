#include "runtime/in_process_transport.h"

#include <chrono>
#include <cstring>
#include <unordered_map>

namespace optpipe::runtime {

class InProcessTransport final : public Transport {
 public:
  InProcessTransport(InProcessHub& hub, int rank) : hub_(hub), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return hub_.ranks(); }
  const char* name() const override { return "threads"; }

  Request irecv(int peer, int tag, void* buffer, std::size_t bytes) override {
    check_peer(peer);
    const Request id = next_++;
    pending_[id] = Pending{peer, tag, buffer, bytes};
    return id;
  }
  Request isend(int peer, int tag, const void* buffer, std::size_t bytes) override {
    check_peer(peer);
    std::vector<char> msg(bytes);
    if (bytes > 0) std::memcpy(msg.data(), buffer, bytes);
    {
      std::lock_guard<std::mutex> lock(hub_.mu_);
      hub_.mail_[{rank_, peer, tag}].push_back(std::move(msg));
    }
    hub_.cv_.notify_all();
    return 0;  // complete: the hub holds a copy
  }
  void wait(Request request, double timeout_s, const std::string& what) override {
    if (request == 0) return;
    auto it = pending_.find(request);
    if (it == pending_.end()) throw TransportError("rank " + std::to_string(rank_) + ": unknown request for " + what);
    const Pending p = it->second;
    pending_.erase(it);
    std::vector<char> msg = take(p.peer, p.tag, timeout_s, what);
    if (msg.size() != p.bytes) {
      throw TransportError("rank " + std::to_string(rank_) + ": " + what + ": got " + std::to_string(msg.size()) +
                           " bytes from rank " + std::to_string(p.peer) + ", expected " + std::to_string(p.bytes));
    }
    if (p.bytes > 0) std::memcpy(p.buffer, msg.data(), p.bytes);
  }
  std::vector<std::vector<double>> gather(const std::vector<double>& mine, double timeout_s) override {
    if (rank_ != 0) {
      isend(0, kGatherTag, mine.data(), mine.size() * sizeof(double));
      return {};
    }
    std::vector<std::vector<double>> all(static_cast<std::size_t>(size()));
    all[0] = mine;
    for (int r = 1; r < size(); ++r) {
      std::vector<char> msg = take(r, kGatherTag, timeout_s, "the results of rank " + std::to_string(r));
      all[static_cast<std::size_t>(r)].resize(msg.size() / sizeof(double));
      if (!msg.empty()) std::memcpy(all[static_cast<std::size_t>(r)].data(), msg.data(), msg.size());
    }
    return all;
  }
  void broadcast(std::vector<char>& data, double timeout_s) override {
    if (rank_ == 0) {
      for (int r = 1; r < size(); ++r) isend(r, kBroadcastTag, data.data(), data.size());
    } else {
      data = take(0, kBroadcastTag, timeout_s, "the broadcast from rank 0");
    }
  }
  void abort(const std::string& why) override {
    {
      std::lock_guard<std::mutex> lock(hub_.mu_);
      if (hub_.aborted_.empty()) hub_.aborted_ = "rank " + std::to_string(rank_) + " failed: " + why;
    }
    hub_.cv_.notify_all();
  }

 private:
  static constexpr int kGatherTag = -1, kBroadcastTag = -2;
  struct Pending {
    int peer, tag;
    void* buffer;
    std::size_t bytes;
  };

  void check_peer(int peer) const {
    if (peer < 0 || peer >= size()) throw TransportError("rank " + std::to_string(peer) + " does not exist");
  }
  std::vector<char> take(int from, int tag, double timeout_s, const std::string& what) {
    std::unique_lock<std::mutex> lock(hub_.mu_);
    const auto key = std::make_tuple(from, rank_, tag);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (true) {
      if (!hub_.aborted_.empty()) throw TransportError("rank " + std::to_string(rank_) + " stops: " + hub_.aborted_);
      auto it = hub_.mail_.find(key);
      if (it != hub_.mail_.end() && !it->second.empty()) {
        std::vector<char> msg = std::move(it->second.front());
        it->second.pop_front();
        return msg;
      }
      if (hub_.cv_.wait_until(lock, deadline) == std::cv_status::timeout) {
        it = hub_.mail_.find(key);
        if (it != hub_.mail_.end() && !it->second.empty()) continue;
        throw TransportError("rank " + std::to_string(rank_) + ": no " + what + " from rank " + std::to_string(from) +
                             " within " + std::to_string(timeout_s) + " s (has it failed, or does it run another "
                             "schedule?)");
      }
    }
  }

  InProcessHub& hub_;
  int rank_;
  Request next_ = 1;
  std::unordered_map<Request, Pending> pending_;
};

std::unique_ptr<Transport> InProcessHub::transport(int rank) {
  if (rank < 0 || rank >= ranks_) throw TransportError("rank " + std::to_string(rank) + " does not exist");
  return std::make_unique<InProcessTransport>(*this, rank);
}

}  // namespace optpipe::runtime
