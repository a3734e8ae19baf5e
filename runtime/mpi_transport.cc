// The MPI transport (mpi_transport.h) inside the MPI plugin (plugins/mpi_plugin.h;
// make_mpi_transport in mpi_transport_via_plugin.cc loads it).
#include "runtime/mpi_transport.h"

#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <unordered_map>

#include "plugins/mpi_plugin.h"

namespace optpipe::runtime {
namespace {

void check(int code, const char* what) {
  if (code != MPI_SUCCESS) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(code, msg, &len);
    throw TransportError(std::string("MPI error in ") + what + ": " + std::string(msg, static_cast<std::size_t>(len)));
  }
}

class MpiTransport final : public Transport {
 public:
  explicit MpiTransport(int max_tag) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
    void* ub = nullptr;
    int flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
    tag_ub_ = flag ? *static_cast<int*>(ub) : 32767;
    if (max_tag + 2 > tag_ub_) {
      throw TransportError("the schedule needs message tags up to " + std::to_string(max_tag + 2) +
                           " but this MPI allows " + std::to_string(tag_ub_));
    }
    gather_tag_ = max_tag + 1;
    broadcast_tag_ = max_tag + 2;
  }
  ~MpiTransport() override {
    for (auto& [id, req] : pending_) MPI_Request_free(&req);
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* name() const override { return "mpi"; }

  Request irecv(int peer, int tag, void* buffer, std::size_t bytes) override {
    MPI_Request req;
    check(MPI_Irecv(buffer, static_cast<int>(bytes), MPI_BYTE, peer, tag, MPI_COMM_WORLD, &req), "MPI_Irecv");
    return add(req);
  }
  Request isend(int peer, int tag, const void* buffer, std::size_t bytes) override {
    MPI_Request req;
    check(MPI_Isend(buffer, static_cast<int>(bytes), MPI_BYTE, peer, tag, MPI_COMM_WORLD, &req), "MPI_Isend");
    return add(req);
  }
  void wait(Request request, double timeout_s, const std::string& what) override {
    auto it = pending_.find(request);
    if (it == pending_.end()) throw TransportError("rank " + std::to_string(rank_) + ": unknown request for " + what);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    int done = 0, polls = 0;
    MPI_Status status;
    while (true) {
      check(MPI_Test(&it->second, &done, &status), "MPI_Test");
      if (done) break;
      if (std::chrono::steady_clock::now() > deadline) {
        throw TransportError("rank " + std::to_string(rank_) + ": " + what + " did not complete within " +
                             std::to_string(timeout_s) + " s (has a peer failed, or does it run another schedule?)");
      }
      // Poll often at first (a message usually comes soon), then back off so that waiting
      // ranks leave the cores to the ranks that compute.
      std::this_thread::sleep_for(std::chrono::microseconds(++polls < 200 ? 10 : 100));
    }
    pending_.erase(it);
  }
  std::vector<std::vector<double>> gather(const std::vector<double>& mine, double timeout_s) override {
    if (rank_ != 0) {
      const Request q = isend(0, gather_tag_, mine.data(), mine.size() * sizeof(double));
      wait(q, timeout_s, "sending results to rank 0");
      return {};
    }
    std::vector<std::vector<double>> all(static_cast<std::size_t>(size_));
    all[0] = mine;
    for (int r = 1; r < size_; ++r) {
      MPI_Status st;
      int flag = 0;
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
      while (true) {
        check(MPI_Iprobe(r, gather_tag_, MPI_COMM_WORLD, &flag, &st), "MPI_Iprobe");
        if (flag) break;
        if (std::chrono::steady_clock::now() > deadline) {
          throw TransportError("rank 0: no results from rank " + std::to_string(r) + " within " +
                               std::to_string(timeout_s) + " s");
        }
        std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
      int bytes = 0;
      MPI_Get_count(&st, MPI_BYTE, &bytes);
      all[static_cast<std::size_t>(r)].resize(static_cast<std::size_t>(bytes) / sizeof(double));
      check(MPI_Recv(all[static_cast<std::size_t>(r)].data(), bytes, MPI_BYTE, r, gather_tag_, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE),
            "MPI_Recv");
    }
    return all;
  }
  void broadcast(std::vector<char>& data, double timeout_s) override {
    if (rank_ == 0) {
      std::vector<Request> qs;
      for (int r = 1; r < size_; ++r) qs.push_back(isend(r, broadcast_tag_, data.data(), data.size()));
      for (Request q : qs) wait(q, timeout_s, "the broadcast from rank 0");
      return;
    }
    MPI_Status st;
    int flag = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (true) {
      check(MPI_Iprobe(0, broadcast_tag_, MPI_COMM_WORLD, &flag, &st), "MPI_Iprobe");
      if (flag) break;
      if (std::chrono::steady_clock::now() > deadline) {
        throw TransportError("rank " + std::to_string(rank_) + ": no broadcast from rank 0 within " +
                             std::to_string(timeout_s) + " s");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    int bytes = 0;
    MPI_Get_count(&st, MPI_BYTE, &bytes);
    data.resize(static_cast<std::size_t>(bytes));
    check(MPI_Recv(data.data(), bytes, MPI_BYTE, 0, broadcast_tag_, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
  }
  // MPI_Abort ends this process too, so the reason is printed first: otherwise the failing
  // rank's own error would never be seen, only mpirun's note that it aborted.
  void abort(const std::string& why) override {
    std::fprintf(stderr, "optpipe: rank %d failed: %s; stopping every rank\n", rank_, why.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }

 private:
  Request add(MPI_Request req) {
    const Request id = next_++;
    pending_[id] = req;
    return id;
  }
  int rank_ = 0, size_ = 1, tag_ub_ = 32767, gather_tag_ = 0, broadcast_tag_ = 0;
  Request next_ = 1;
  std::unordered_map<Request, MPI_Request> pending_;
};

}  // namespace

std::unique_ptr<Transport> mpi_impl::make_transport(int max_tag) { return std::make_unique<MpiTransport>(max_tag); }

}  // namespace optpipe::runtime
