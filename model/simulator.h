// The simulator: the timing semantics of spec §4, exactly. Single source of truth for makespan,
// bubble, peak memory, the timeline and the memory curves; the heuristics, the solver and the
// executor all measure schedules with it.
//
// Algorithm: a discrete-event simulation over "time buckets". At the earliest pending event
// time t it settles everything that happens at t in the order the spec prescribes:
//   1. completions at t: compute ends (B and W free memory; an F with r > 0 requests its D2H
//      transfer), transfer ends (an offload frees r·activation; a reload makes B ready);
//   2. devices in id order: reloads reached in the list are requested at now[d]; the next
//      compute action starts if its inputs are ready and, for F, memory fits;
//   3. offloads start on free D2H channels (FIFO in request order; ties: device id, list order);
//   4. only when 1-3 change nothing more: reloads start on free H2D channels when their offload
//      has ended and memory fits ("removals before additions, F before reload" at equal times).
// Zero-length ops are settled by repeating 1-4 until nothing changes. Then t advances to the
// next compute end, transfer end or input-ready time. When nothing is pending but work remains,
// the schedule deadlocks (a memory wait that never ends, or a cycle between the device lists),
// and the result says which device waits for what.
//
// Times are doubles in ms; times within kTimeEps (1e-9 ms) count as equal for the tie rules.
// Memory is in bytes (doubles, fractional bytes allowed); a fit test tolerates kMemoryTolerance
// (1 byte) of floating-point rounding.
//
// Events (compute ends, transfer ends, input-ready wake-ups) wait in a binary heap; an event
// marks only the devices and channels whose waits it can end (the device itself, the devices of
// the neighbouring stages, the PCIe group's channels), and only marked ones are re-examined.
// Complexity: O(N log N) for N actions and transfers.
// A Simulator object keeps its buffers between runs, so repeated runs on one instance allocate
// almost nothing after the first.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <queue>
#include <string>
#include <vector>

#include "model/instance.h"
#include "model/op_index.h"
#include "model/schedule.h"

namespace optpipe {

inline constexpr double kTimeEps = 1e-9;
inline constexpr double kMemoryTolerance = 1.0;

struct SimOptions {
  bool record_timeline = true;        // start/end of every action and transfer
  bool record_memory = true;          // memory curve per device
  bool enforce_memory_limit = true;   // false: never wait for memory, only measure peaks

  // Neither timeline nor memory curves: makespan, bubble, peaks and feasibility only (the
  // fastest run, for callers that only compare schedules). `enforce_memory_limit` false: a free
  // run that only measures the peaks.
  static SimOptions quiet(bool enforce_memory_limit = true) {
    SimOptions o;
    o.record_timeline = false;
    o.record_memory = false;
    o.enforce_memory_limit = enforce_memory_limit;
    return o;
  }
};

// Timing of one entry of a device's list. For R, start = end = the time it was requested.
struct ActionTiming {
  double start = std::numeric_limits<double>::quiet_NaN();
  double end = std::numeric_limits<double>::quiet_NaN();
  bool done() const { return end == end; }
};

struct Transfer {
  enum class Kind : std::uint8_t { kOffload, kReload };
  Kind kind = Kind::kOffload;
  int device = 0, group = 0;      // group: index of the PCIe group (0..num_groups-1)
  int stage = 0, mb = 0;
  int list_index = 0;             // the F (offload) or R (reload) entry in the device's list
  double r = 0, bytes = 0;
  double request = 0, start = 0, end = 0;
  bool started = false, finished = false;
};

// A step of a device's memory curve: `bytes` (static memory included) from `time` until the
// next point. There is one point per instant, holding the value after everything that happens
// at that instant; the peak (SimResult::peak_memory) also counts values within an instant.
struct MemoryPoint {
  double time = 0;
  double bytes = 0;
};

// What a device or channel waits for when a simulation deadlocks.
struct Stall {
  enum class Kind : std::uint8_t {
    kInput,           // a compute action waits for an op that never ends (a cycle, or a wait behind one)
    kForwardMemory,   // an F waits for memory that nothing in flight frees
    kReloadMemory,    // the head of an H2D channel waits for memory on its device
    kReloadOffload,   // the head of an H2D channel waits for an offload that never comes
  };
  Kind kind = Kind::kInput;
  int device = 0;
  int list_index = 0;   // the waiting action in the device's list (for reloads: the R)
  double needed = 0;    // memory kinds: bytes the action adds
  double free = 0;      // memory kinds: bytes free under the limit at the stop
};

struct SimResult {
  bool feasible = false;
  std::string reason;                 // when infeasible: what deadlocked, in one line
  double stop_time = 0;               // when infeasible: the time the simulation stopped
  std::vector<Stall> stalls;          // when infeasible: every waiting device and channel head
  double makespan = 0;                // latest end of a compute action (when infeasible: of those that ran)
  double bubble = 0;                  // 1 - Σ busy / (D · makespan); NaN when infeasible
  std::vector<double> busy;           // per device: sum of its compute durations
  std::vector<double> peak_memory;    // per device: peak bytes, static memory included
  std::vector<std::vector<ActionTiming>> timeline;  // [device][list index] (record_timeline)
  std::vector<Transfer> transfers;                  // in request order (record_timeline)
  std::vector<std::vector<MemoryPoint>> memory;     // [device] step curve (record_memory)
  std::vector<int> group_of_device;   // PCIe group index of each device
  int num_groups = 0;
};

class Simulator {
 public:
  explicit Simulator(const Instance& instance);

  // Simulates `schedule` (which must pass check_structure(), validator.h; out-of-range stage or
  // microbatch indices throw InputError). Never throws for timing problems: a deadlock is a
  // result with feasible == false and a reason.
  SimResult run(const Schedule& schedule, const SimOptions& options = {});

  const Instance& instance() const { return inst_; }

  // ---- Incremental use: schedule generation in time order (the search) ----------------------
  // start_open() begins a simulation whose lists are open: they start empty and grow while it
  // runs. advance() simulates until a device is idle with its list used up while it still has
  // ops; that device's next action is then a decision (Step::kDecision, at the current time):
  // append() it and advance() again. (advance() without an append lets that device idle past
  // its decision, so restore a decision's state and append to it, as the search does.) An R appended is requested at once, so several Rs and then
  // a compute action may be appended at one decision time. Everything that started before a
  // decision is final: later decisions only add actions after it. The state is a value:
  // snapshot() and restore() save and resume it (nodes of a search tree). No recording.
  struct Request {
    double time;
    int device, list_index, sj;
    double duration, bytes;
    bool reload;
    int transfer;  // index into Snapshot::transfers
  };
  // A pending event: a compute or transfer end, or a device whose inputs arrive at `time`.
  struct PendingEvent {
    enum class Kind : std::uint8_t { kCompute, kTransfer, kWake };
    double time;
    Kind kind;
    int id;       // device (compute, wake) or PCIe group (transfer)
    bool reload;  // transfer: on the H2D channel
    bool operator>(const PendingEvent& o) const { return time > o.time; }
  };
  struct Channel {
    std::vector<Request> queue;
    std::size_t head = 0;
    bool busy = false;
    double busy_end = 0, free_at = 0;
  };
  // The simulation's state, a value: what a run changes and needs later, and nothing else (the
  // run's options, its recording target and the settling step's scratch stay in the Simulator).
  // The search saves one per node and resumes from it (snapshot(), restore()); the bounds and
  // the search read it through const references. Op arrays are indexed by op_id(type, s, j);
  // sj = s*m + j.
  struct Snapshot {
    double t = 0;                            // the instant being settled
    std::vector<int> pc;                     // per device: next list index to process
    std::vector<char> running;               // per device: a compute action is running
    std::vector<double> run_end, now;        // per device: its end; end of the previous compute
    std::vector<double> mem, peak;           // per device, bytes
    std::vector<int> run_index;              // per device: list index of the running action
    std::vector<double> start, end;          // per op; NaN until known
    std::vector<double> level;               // per sj: offload fraction of F(s,j)
    std::vector<double> off_end, rel_end;    // per sj; NaN until done
    std::vector<Channel> d2h, h2d;           // per PCIe group
    std::vector<Transfer> transfers;
    std::priority_queue<PendingEvent, std::vector<PendingEvent>, std::greater<PendingEvent>> events;
    // Devices and channels whose waits an event may have ended, still to be examined (a
    // decision can interrupt the examination; it resumes from here).
    std::vector<char> device_dirty, d2h_dirty, h2d_dirty;
    std::vector<int> dirty_devices, dirty_d2h, dirty_h2d;
    int remaining = 0;                       // compute actions not finished
    double makespan = 0;                     // latest compute end so far
    // Open lists (start_open):
    bool open = false;
    Schedule owned;                          // the lists so far
    std::vector<int> unlisted;               // per device: compute ops not yet in its list
    std::vector<int> next_mb;                // [type*S + s]: next microbatch to append
  };
  struct Step {
    enum class Kind : std::uint8_t { kDecision, kDone, kDeadlock };
    Kind kind;
    int device;   // kDecision: the device that needs its next action
    double time;  // the current time
  };

  void start_open();
  Step advance();
  void append(int device, const Action& action);
  // The state now, read-only; copy it to keep it.
  const Snapshot& snapshot() const { return s_; }
  // Resumes from `snapshot` (taken from a simulation with open lists, by this Simulator or
  // another one on the same instance): open lists, no recording.
  void restore(const Snapshot& snapshot);
  // A memory wait that can never end, seen before the open-list simulation gets stuck
  // everywhere: a device whose next action is an F that has not started and for which there is no
  // room even once its pending offloads have ended. Until that F starts the device runs nothing
  // else (its list is in order), whether the F's inputs are done or not, so only those offload
  // ends can free memory there (a reload's start only adds): no continuation of the lists can
  // start the F (the search cuts such nodes). Checking it before the inputs arrive cuts the node
  // that listed the F instead of its whole subtree: on gpt-8x24-tight the tree first reached
  // depth 55 of 600 decisions, every dive dying there, and now goes past 150 (bench/README.md).
  bool forward_wait_never_ends() const;
  int op_id(OpType type, int s, int j) const { return op_index(S_, m_, static_cast<int>(type), s, j); }

  // ---- Checkpoints: re-simulating a schedule that differs late (the local search) -----------
  // run() with quiet options that also appends its state to `checkpoints` every `every` settled
  // instants (after the instant is settled, before time moves on).
  SimResult run_recording(const Schedule& schedule, int every, std::vector<Snapshot>& checkpoints);
  // Continues `schedule` from `checkpoint`, a state that run_recording() saved for another
  // schedule, with quiet options; `record` (when not null) receives further checkpoints as in
  // run_recording(). The result is run(schedule, quiet)'s exactly when every device's list in
  // `schedule` equals the other schedule's list up to (not including) the first entry that
  // device had not reached in the checkpoint (pc): an entry is read only when pc reaches it, so
  // the two simulations agree up to that state (checkpointed_simulation.h finds such a one).
  SimResult resume(const Schedule& schedule, const Snapshot& checkpoint, int every = 0,
                   std::vector<Snapshot>* record = nullptr);

 private:
  enum class DeviceStep : std::uint8_t { kNone, kProgress, kNeedsDecision };

  void reset_state(const SimOptions& options);
  void reset(const Schedule& schedule, const SimOptions& options);
  const std::vector<Action>& list(int d) const { return s_.open ? s_.owned.devices[d] : sch_->devices[d]; }
  void mark_device(int d);
  void mark_channel(int g, bool reload);
  void mark_around(int d, int stage);
  void handle(const PendingEvent& e);
  bool start_dirty_channels(double t, bool reloads);
  bool complete_compute(int d);
  DeviceStep advance_device(int d, double t);
  bool try_start_channel(Channel& ch, double t, bool reloads);
  void complete_transfer(Channel& ch);
  // Appends a Transfer record for action `a` (list index k of device d); returns its index.
  int record_transfer(Transfer::Kind kind, int d, int k, const Action& a, double r, double request);
  void enqueue(Channel& ch, const Request& req);
  void change_memory(int d, double delta, double t);
  double ready_time(const Action& a, bool* known, int* waiting_op) const;
  std::vector<Stall> find_stalls() const;
  std::string describe_deadlock(double t, const std::vector<Stall>& stalls) const;
  std::string op_name(int op) const;

  const Instance& inst_;
  int D_, S_, m_, G_;
  std::vector<int> group_of_;                 // device -> group index
  std::vector<double> dur_;                   // [type*S + s]
  std::vector<double> comm_after_;            // [s]
  const Schedule* sch_ = nullptr;             // run(): the closed lists
  SimOptions opt_;                            // this run's options
  SimResult* out_ = nullptr;                  // run()'s recording target; null otherwise
  std::vector<int> scratch_;                  // start_dirty_channels' list being examined
  class Recording;                            // sets record_ for one run (simulator.cc)
  std::vector<Snapshot>* record_ = nullptr;   // run_recording()/resume(): checkpoints go here
  int record_every_ = 0, instants_ = 0;       // every that many settled instants
  void finish(Step step);                     // run()'s result (into out_) from the state after advance()
  Snapshot s_;
};

// Convenience: one-shot simulation.
SimResult simulate(const Instance& instance, const Schedule& schedule, const SimOptions& options = {});

}  // namespace optpipe
