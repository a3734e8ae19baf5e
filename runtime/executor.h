// The executor core (issue 7): runs one device's program (program.h) for a number of training
// iterations with the spec's semantics (spec §4), on any Transport (transport.h):
//
//   - one compute stream: the program's compute steps in order, on the calling thread;
//   - a D2H and an H2D copy stream (copy_stream.h): an offload is queued when its F ends, a
//     reload when the program reaches R; a reload waits for its offload and for room;
//   - activation memory accounted in the instance's bytes (tracked_memory.h), with the
//     simulator's waits: F waits for room (only offloads can free it meanwhile), a reload waits
//     on its copy stream while the compute stream goes on;
//   - every receive posted when the iteration starts and every send non-blocking, so a valid
//     schedule cannot deadlock (program.h); every wait has a deadline (`timeout_s`), so a peer
//     that died or runs another schedule ends in an error on every rank, not a hang.
//
// With stage models (stage_model.h) the ops compute for real on the backend's buffers
// (device_backend.h: host memory on the CPU backend, device memory on the CUDA one): F's kept
// activation is copied to host memory by an offload and its device copy is poisoned (NaN), so a
// reload that did not happen shows in the gradients. Without models (synthetic mode) every op and copy sleeps for
// the instance's duration times `time_scale`, messages are 8 bytes, and the measured iteration
// time can be compared with the simulator's makespan.
//
// PCIe channels: with the threads transport the devices of a pcie_group share their D2H and
// H2D channels (SharedChannels: transfers in the simulated channel order, spec §4); across MPI
// processes each device has its own copy streams, and on GPUs the shared switch shares them.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "model/instance.h"
#include "runtime/device_backend.h"
#include "runtime/program.h"
#include "runtime/stage_model.h"
#include "runtime/transport.h"

namespace optpipe::runtime {

class SharedChannels;  // shared_channels.h

// A failure drill (issue 20): device `device` fails when it reaches step `step` (0-based, in
// its program's order) of iteration `iteration`, as a rank that hits an error or dies would.
// kThrow: the step throws (the device tells the others through Transport::abort, as for any
// error); kKill: the process kills itself with SIGKILL (no goodbye; under mpirun the launcher
// must notice). `optpipe train` sets it from $OPTPIPE_FAULT; the drill tests use it.
struct FaultDrill {
  enum class Kind { kThrow, kKill };
  int device = -1;  // -1: no drill
  int iteration = 0;
  int step = 0;
  Kind kind = Kind::kThrow;
};
// Parses "device=D[,iteration=I][,step=K][,kind=throw|kill]"; throws InputError naming the
// part that is wrong.
FaultDrill parse_fault_drill(const std::string& text);

struct ExecutorOptions {
  int iterations = 1;
  double timeout_s = 60;     // the longest any single wait may take
  double time_scale = 1.0;   // synthetic mode: wall milliseconds per instance millisecond
  bool poison_offloaded = true;  // with models: overwrite the offloaded part of the device copy
  bool synchronize_iterations = true;  // all ranks start each iteration together (for timings)
  // Called on every rank at the start of every iteration (after the common start): a program to
  // run from this iteration on (a schedule switch, online.h), or nothing to keep the current one.
  // Every rank must get the same answer for the same iteration (the caller agrees through the
  // transport).
  std::function<std::optional<DeviceProgram>(int iteration, Transport& transport)> before_iteration;
  // Devices in one process: the PCIe channels their groups share (shared_channels.h). Null:
  // every device has its own D2H and H2D copy streams.
  SharedChannels* channels = nullptr;
  FaultDrill fault;  // a failure drill, or none
};

struct DeviceReport {
  int device = 0;
  std::vector<double> iteration_seconds;  // per iteration, from the common start to this device's end
  std::vector<double> losses;             // per iteration, when the last stage is on this device
  double peak_bytes = 0;                  // tracked peak, static memory included
  int offloads = 0, reloads = 0;          // per run
  std::vector<int> switch_iterations;     // iterations at which this device started a new program
};

// Runs `program` (device `program.device`) for options.iterations iterations. `models[s]` is
// stage s's model for the stages on this device (the others may be null), or every entry null
// for the synthetic mode. Throws on any failure, after telling the other ranks (Transport::abort).
DeviceReport run_device(const Instance& instance, const DeviceProgram& program, const std::vector<StageModel*>& models,
                        Transport& transport, const ExecutorOptions& options);
// The same on a given backend (device_backend.h): its buffers, copies and stream ordering. The
// models must be the backend's (DeviceBackend::make_model).
DeviceReport run_device(const Instance& instance, const DeviceProgram& program, const std::vector<StageModel*>& models,
                        Transport& transport, DeviceBackend& backend, const ExecutorOptions& options);

}  // namespace optpipe::runtime
