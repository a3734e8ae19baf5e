// How the executor's devices exchange activations and gradients (issue 7): non-blocking
// point-to-point messages between ranks (one rank per device), like MPI's Isend/Irecv. Two
// implementations: MpiTransport (mpi_transport.h: one process per device under mpirun, on one
// or many machines) and InProcessTransport (in_process_transport.h: one thread per device in
// one process, for tests and for running without MPI).
//
// A wait has a deadline: a peer that died or a schedule that does not match on every rank ends
// in a TransportError naming the message, never in a hang.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace optpipe::runtime {

class TransportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Transport {
 public:
  using Request = std::int64_t;
  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual const char* name() const = 0;
  // Posts a receive of exactly `bytes` bytes from `peer` with `tag` into `buffer`.
  virtual Request irecv(int peer, int tag, void* buffer, std::size_t bytes) = 0;
  // Starts sending; `buffer` must stay valid until the request completes.
  virtual Request isend(int peer, int tag, const void* buffer, std::size_t bytes) = 0;
  // Waits until the request completes; throws TransportError after `timeout_s` seconds, naming
  // `what`.
  virtual void wait(Request request, double timeout_s, const std::string& what) = 0;
  // Rank 0 gets every rank's values (in rank order); the other ranks get an empty result.
  virtual std::vector<std::vector<double>> gather(const std::vector<double>& mine, double timeout_s) = 0;
  // Every rank gets rank 0's bytes (`data` is resized on the others).
  virtual void broadcast(std::vector<char>& data, double timeout_s) = 0;
  // A rank that failed tells the others, so that they stop too (best effort).
  virtual void abort(const std::string& why) = 0;
};

}  // namespace optpipe::runtime
