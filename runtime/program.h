// Lowering a schedule to per-device programs (issue 7): each device's action list (spec §3)
// becomes a list of instructions that the executor core (executor.h) runs with the spec's
// semantics (spec §4):
//
//   F s.j@r   [wait input s.j]  alloc+compute F  [send output s.j]  [start offload s.j (r)]
//   R s.j     issue reload s.j (on the H2D copy stream; it waits for its offload and for room)
//   B s.j     [wait grad s.j]  [wait reload s.j]  compute B (frees M_B - M_W)  [send grad s.j]
//   W s.j     compute W (frees M_W)
//
// Allocation order. The memory a device allocates (at each F's start and each reload's start)
// is granted in the order the simulation of the schedule grants it (by time; at equal times an
// F before a reload, as in spec §4), each step getting its ticket. Without this, real durations
// can let a reload take the room an F was simulated to take first (or the reverse), and a
// schedule that simulates fine can deadlock: the F then waits for a B that comes after it, or a
// reload for memory only its own B would free. With it, every wait is for an event that comes
// earlier in the simulated time, so the run completes whatever the real durations.
//
// Channel order. Devices of one pcie_group share a D2H and an H2D channel that serve requests
// strictly in order (spec §4); each transfer gets its place in its channel's simulated order
// (channel, channel_ticket), so that an executor serving a shared channel serves it in that
// order (executor.h, SharedChannels).
//
// "wait input" and "wait grad" are receives from the neighbouring stage's device (posted when
// the iteration starts, so that no send ever waits for its peer to reach the matching
// receive); between stages on the same device the buffer is handed over in place. With every
// receive pre-posted and every send non-blocking, a device only ever waits for a message its
// peer will send once its own earlier actions ran, which is the simulator's dependency graph:
// every schedule that simulates without deadlock runs without deadlock.
//
// Complexity: O(actions) to lower; the program has at most 5 instructions per action.
#pragma once

#include <string>
#include <vector>

#include "model/instance.h"
#include "model/schedule.h"

namespace optpipe::runtime {

enum class Instr {
  kWaitInput,     // wait for the activation of (s - 1, j) from its device
  kForward,       // alloc M_B (waits for room), compute F(s, j)
  kSendOutput,    // send F(s, j)'s output to stage s + 1's device
  kStartOffload,  // request the D2H copy of fraction r of (s, j)'s kept activation
  kIssueReload,   // request the H2D copy back (R s.j)
  kWaitGrad,      // wait for the gradient from B(s + 1, j) on its device
  kWaitReload,    // wait until the reload of (s, j) has ended
  kBackward,      // compute B(s, j); frees M_B - M_W (all of M_B when unsplit: B then W)
  kSendGrad,      // send B(s, j)'s input gradient to stage s - 1's device
  kWeight,        // compute W(s, j); frees M_W
};

const char* to_string(Instr i);

struct Step {
  Instr op;
  int stage = 0;
  int mb = 0;
  double r = 0.0;  // kForward / kStartOffload: the offload fraction
  int peer = -1;   // kWaitInput, kWaitGrad: the sending device; kSend*: the receiving device
  int ticket = -1; // kForward, kIssueReload: its place in the device's allocation order
  int channel = -1;         // kStartOffload, kIssueReload: the PCIe group whose D2H / H2D channel serves it
  int channel_ticket = -1;  // its place in that channel's simulated order
};

struct DeviceProgram {
  int device = 0;
  std::vector<Step> steps;
  // The messages this device receives in one iteration (posted up front): (kind, stage, mb, peer)
  // with kind kWaitInput or kWaitGrad.
  std::vector<Step> receives;
  int num_sends = 0;
  int num_allocations = 0;  // tickets 0 .. num_allocations - 1
};

// Per PCIe group, how many transfers its D2H and its H2D channel serve in one iteration (all
// devices of the group together): the channel tickets run 0 .. count - 1.
struct ChannelCounts {
  std::vector<int> d2h, h2d;  // [group]
};
ChannelCounts channel_counts(const std::vector<DeviceProgram>& programs, int groups);

// Checks `schedule` against `instance` (every rule of the spec: validator.h, simulated without
// deadlock) and lowers it. Throws InputError naming the problem (another instance's schedule, a
// truncated list, a deadlock) so that every rank stops with the same message.
std::vector<DeviceProgram> lower_schedule(const Instance& instance, const Schedule& schedule);

// The message tag of (kind, stage, microbatch) in an iteration's parity: unique within two
// consecutive iterations. kind: 0 activation, 1 gradient.
int message_tag(const Instance& instance, int kind, int stage, int mb, int iteration);

// One line per step, e.g. "  3  F   1.2  (r 0.5)": for --verbose and tests.
std::string to_string(const DeviceProgram& program);

}  // namespace optpipe::runtime
