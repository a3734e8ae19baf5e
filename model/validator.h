// The validator: every rule of spec §3, each with its own rule id and message.
//
// check_structure() checks the lists without timing: every op exactly once and on its stage's
// device, FIFO per stage and type, offload levels and the R rules. validate() adds the last
// rule, that the timing completes, by running the simulator (a deadlock, whether from memory
// or from a cycle between the lists, is reported with the simulator's description).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/instance.h"
#include "model/schedule.h"
#include "model/simulator.h"

namespace optpipe {

enum class Rule {
  kDeviceCount,          // one list per device
  kUnknownStage,         // the stage exists
  kUnknownMicrobatch,    // the microbatch exists
  kWrongDevice,          // an op runs on its stage's device
  kNoWeightOps,          // W only when split_backward
  kDuplicate,            // each op at most once
  kMissing,              // each op at least once
  kFifo,                 // per stage and type, microbatches in increasing order
  kBadLevel,             // r is one of offload_levels
  kNotOffloadable,       // r > 0 only on stages with offload/reload times
  kReloadWithoutOffload, // R only when F has r > 0
  kOffloadWithoutReload, // F with r > 0 needs its R
  kReloadOrder,          // R after its F and before its B, in the same list
  kDeadlock,             // the timing completes
};

const char* to_string(Rule rule);

struct Violation {
  Rule rule;
  std::string message;  // one line, names the device and position
  // Where it is, for callers that point at it (an editor, the Python package): the device and
  // the position in its list; -1 when the rule is about no single entry (a missing op, the
  // device count). A deadlock points at the first waiting action the simulator reports.
  int device = -1;
  int position = -1;
};

// All structural violations (empty when the lists are well formed). Lists at most `limit`.
// Memory and time are linear in the schedule's length plus the instance's stages x microbatches;
// above kStageMicrobatchesNamedOneByOne stage-microbatches, a schedule too short to hold every op
// gets a single kMissing violation with the counts instead, in time linear in its length.
inline constexpr double kStageMicrobatchesNamedOneByOne = 1 << 20;
std::vector<Violation> check_structure(const Instance& instance, const Schedule& schedule,
                                       std::size_t limit = 50);

struct Validation {
  std::vector<Violation> violations;
  std::optional<SimResult> sim;  // present when the structure is valid
  bool valid() const { return violations.empty(); }
};

Validation validate(const Instance& instance, const Schedule& schedule, const SimOptions& options = {});

// A quick sufficient check that no schedule can fit (some stage's one activation plus its
// device's static memory exceeds the limit); the reason, or nullopt.
std::optional<std::string> obviously_infeasible(const Instance& instance);

}  // namespace optpipe
