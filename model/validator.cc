#include "model/validator.h"

#include <cmath>
#include <iomanip>
#include <sstream>

#include "model/bytes.h"

namespace optpipe {

const char* to_string(Rule rule) {
  switch (rule) {
    case Rule::kDeviceCount: return "device-count";
    case Rule::kUnknownStage: return "unknown-stage";
    case Rule::kUnknownMicrobatch: return "unknown-microbatch";
    case Rule::kWrongDevice: return "wrong-device";
    case Rule::kNoWeightOps: return "no-weight-ops";
    case Rule::kDuplicate: return "duplicate";
    case Rule::kMissing: return "missing";
    case Rule::kFifo: return "fifo";
    case Rule::kBadLevel: return "bad-level";
    case Rule::kNotOffloadable: return "not-offloadable";
    case Rule::kReloadWithoutOffload: return "reload-without-offload";
    case Rule::kOffloadWithoutReload: return "offload-without-reload";
    case Rule::kReloadOrder: return "reload-order";
    case Rule::kDeadlock: return "deadlock";
  }
  return "?";
}

namespace {

std::string where(int d, std::size_t k) {
  return "device " + std::to_string(d) + ", position " + std::to_string(k);
}

std::string levels_text(const Instance& inst) {
  std::ostringstream s;
  for (std::size_t i = 0; i < inst.offload_levels.size(); ++i) s << (i ? ", " : "") << inst.offload_levels[i];
  return s.str();
}

struct Seen {
  int device = -1;
  std::size_t position = 0;
};

// The violations found so far, at most `limit` of them (the checks go on but add nothing more).
class Findings {
 public:
  explicit Findings(std::size_t limit) : limit_(limit) {}
  void add(Rule rule, std::string message, int device = -1, std::size_t position = kNowhere) {
    if (out_.size() >= limit_) return;
    out_.push_back({rule, std::move(message), device, position == kNowhere ? -1 : static_cast<int>(position)});
  }
  static constexpr std::size_t kNowhere = static_cast<std::size_t>(-1);
  std::vector<Violation> take() { return std::move(out_); }

 private:
  std::size_t limit_;
  std::vector<Violation> out_;
};

// Where each op was found in the lists, by type (F, B, W, R), stage and microbatch; device -1:
// nowhere.
class Places {
 public:
  Places(int stages, int microbatches)
      : m_(microbatches), seen_(4, std::vector<Seen>(static_cast<std::size_t>(stages) * microbatches)) {}
  Seen& at(int type, int s, int j) { return seen_[type][static_cast<std::size_t>(s) * m_ + j]; }
  const Seen& at(int type, int s, int j) const { return seen_[type][static_cast<std::size_t>(s) * m_ + j]; }

 private:
  int m_;
  std::vector<std::vector<Seen>> seen_;
};

// False (with the violation) when the action at device d, position k names no op of the
// instance: its stage or microbatch does not exist, or it is a W without split_backward.
bool names_an_op(const Instance& inst, int d, std::size_t k, const Action& a, const std::string& name,
                 Findings& found) {
  const int S = inst.num_stages(), m = inst.microbatches;
  if (a.stage >= S) {
    found.add(Rule::kUnknownStage, where(d, k) + ": " + name + ": stage " + std::to_string(a.stage) +
                                       " does not exist (the instance has " + std::to_string(S) + " stages)",
              d, k);
    return false;
  }
  if (a.mb >= m) {
    found.add(Rule::kUnknownMicrobatch, where(d, k) + ": " + name + ": microbatch " + std::to_string(a.mb) +
                                            " does not exist (the instance has " + std::to_string(m) + " microbatches)",
              d, k);
    return false;
  }
  if (a.type == OpType::W && !inst.split_backward) {
    found.add(Rule::kNoWeightOps, where(d, k) + ": " + name +
                                      ": the instance has no W ops (split_backward is false; B is the fused backward)",
              d, k);
    return false;
  }
  return true;
}

// An offloading F's level must be one of the instance's, on a stage that can offload.
void check_offload_level(const Instance& inst, int d, std::size_t k, const Action& a, const std::string& name,
                         Findings& found) {
  if (a.type != OpType::F || a.r == 0.0) return;
  if (!inst.is_offload_level(a.r)) {
    std::ostringstream r;
    r << a.r;
    found.add(Rule::kBadLevel, where(d, k) + ": " + name + ": " + r.str() +
                                   " is not an offload level of the instance (levels: " + levels_text(inst) + ")",
              d, k);
  } else if (!inst.stages[a.stage].offloadable()) {
    found.add(Rule::kNotOffloadable, where(d, k) + ": " + name + ": stage " + std::to_string(a.stage) +
                                         " cannot be offloaded (it has no offload/reload times)",
              d, k);
  }
}

// The rules of each action in its list: it names an op, on its stage's device, once, in FIFO
// order, at a valid offload level. Returns where each op was found.
Places check_lists(const Instance& inst, const Schedule& sch, Findings& found) {
  const int S = inst.num_stages();
  Places places(S, inst.microbatches);
  std::vector<std::vector<int>> last_mb(4, std::vector<int>(S, -1));  // [type][stage]
  for (int d = 0; d < inst.num_devices(); ++d) {
    const auto& list = sch.devices[d];
    for (std::size_t k = 0; k < list.size(); ++k) {
      const Action& a = list[k];
      const std::string name = to_string(a);
      const int t = static_cast<int>(a.type);
      if (!names_an_op(inst, d, k, a, name, found)) continue;
      const int home = inst.stages[a.stage].device;
      if (home != d) {
        found.add(Rule::kWrongDevice, where(d, k) + ": " + name + " is on device " + std::to_string(d) +
                                          " but stage " + std::to_string(a.stage) + " is placed on device " +
                                          std::to_string(home),
                d, k);
      }
      Seen& s = places.at(t, a.stage, a.mb);
      if (s.device >= 0) {
        found.add(Rule::kDuplicate,
                  where(d, k) + ": " + name + " appears twice (first at " + where(s.device, s.position) + ")",
                d, k);
        continue;
      }
      s = {d, k};
      // FIFO is about one list's order; an op on the wrong device is reported above and kept out
      // of it (comparing it with ops of another list would report an order that no list has).
      if (home == d) {
        if (a.mb < last_mb[t][a.stage]) {
          found.add(Rule::kFifo, where(d, k) + ": " + name + " comes after " + std::string(1, type_letter(a.type)) +
                                     std::to_string(a.stage) + "." + std::to_string(last_mb[t][a.stage]) +
                                     " (microbatches of one stage and type must be in increasing order)",
                    d, k);
        }
        last_mb[t][a.stage] = std::max(last_mb[t][a.stage], a.mb);
      }
      check_offload_level(inst, d, k, a, name, found);
    }
  }
  return places;
}

// Every compute op (F, B and, with split_backward, W) of every stage and microbatch is somewhere.
void check_missing(const Instance& inst, const Places& places, Findings& found) {
  const char* kTypes = "FBWR";
  const int compute_types = inst.num_compute_types();
  for (int t = 0; t < compute_types; ++t) {
    for (int s = 0; s < inst.num_stages(); ++s) {
      for (int j = 0; j < inst.microbatches; ++j) {
        if (places.at(t, s, j).device < 0) {
          found.add(Rule::kMissing, std::string(1, kTypes[t]) + std::to_string(s) + "." + std::to_string(j) +
                                        " is missing (expected on device " + std::to_string(inst.stages[s].device) +
                                        ")");
        }
      }
    }
  }
}

// R rules: present exactly when F has r > 0, after F and before B in the same list.
void check_reloads(const Instance& inst, const Schedule& sch, const Places& places, Findings& found) {
  for (int s = 0; s < inst.num_stages(); ++s) {
    for (int j = 0; j < inst.microbatches; ++j) {
      const Seen& f = places.at(0, s, j);
      const Seen& b = places.at(1, s, j);
      const Seen& r = places.at(3, s, j);
      const std::string sjs = std::to_string(s) + "." + std::to_string(j);
      const bool offloaded = f.device >= 0 && sch.devices[f.device][f.position].r > 0;
      if (r.device >= 0 && !offloaded) {
        found.add(Rule::kReloadWithoutOffload,
                  where(r.device, r.position) + ": R" + sjs + " but F" + sjs + " is not offloaded (no @r > 0)",
                  r.device, r.position);
      } else if (offloaded && r.device < 0) {
        found.add(Rule::kOffloadWithoutReload, "F" + sjs + " offloads (at " + where(f.device, f.position) +
                                                   ") but R" + sjs + " is missing",
                  f.device, f.position);
      } else if (offloaded) {
        if (r.device != f.device || r.position < f.position) {
          found.add(Rule::kReloadOrder, where(r.device, r.position) + ": R" + sjs + " must come after F" + sjs +
                                            " in the same list (F" + sjs + " is at " + where(f.device, f.position) +
                                            ")",
                    r.device, r.position);
        } else if (b.device >= 0 && (b.device != r.device || b.position < r.position)) {
          found.add(Rule::kReloadOrder, where(r.device, r.position) + ": R" + sjs + " must come before B" + sjs +
                                            " in the same list (B" + sjs + " is at " + where(b.device, b.position) +
                                            ")",
                    r.device, r.position);
        }
      }
    }
  }
}

}  // namespace

std::vector<Violation> check_structure(const Instance& inst, const Schedule& sch, std::size_t limit) {
  Findings found(limit);
  const int D = inst.num_devices();
  if (sch.num_devices() != D) {
    found.add(Rule::kDeviceCount, "the schedule has " + std::to_string(sch.num_devices()) +
                                      " device lists, the instance " + std::to_string(D) + " devices");
    return found.take();
  }
  // The lists cannot hold every op of an instance this large: say so at once, without the
  // table of every (type, stage, microbatch) that the checks below fill (64 bytes a stage and
  // microbatch: 6.4 GB for a file of 100 stages x 1e6 microbatches and a schedule of one action,
  // which `optpipe validate` and the cache's import allocated; issue 20's fuzzing). Below the
  // threshold each missing op is named as usual.
  const double pairs = static_cast<double>(inst.num_stages()) * inst.microbatches;
  const double needed = pairs * inst.num_compute_types();
  const double given = static_cast<double>(sch.num_actions());
  if (pairs > kStageMicrobatchesNamedOneByOne && needed > given) {
    std::ostringstream m;
    m << std::fixed << std::setprecision(0) << "the schedule has " << given << (given == 1 ? " action" : " actions") << ", but the instance needs "
      << needed << " compute ops (" << inst.num_stages() << " stages x " << inst.microbatches << " microbatches x "
      << (inst.split_backward ? "F, B, W" : "F, B") << "): at least " << needed - given << " are missing";
    found.add(Rule::kMissing, m.str());
    return found.take();
  }
  const Places places = check_lists(inst, sch, found);
  check_missing(inst, places, found);
  check_reloads(inst, sch, places, found);
  return found.take();
}

Validation validate(const Instance& inst, const Schedule& sch, const SimOptions& options) {
  Validation v;
  v.violations = check_structure(inst, sch);
  if (!v.violations.empty()) return v;
  v.sim = simulate(inst, sch, options);
  if (!v.sim->feasible) {
    Violation deadlock{Rule::kDeadlock, "the timing does not complete: " + v.sim->reason};
    if (!v.sim->stalls.empty()) {
      deadlock.device = v.sim->stalls.front().device;
      deadlock.position = v.sim->stalls.front().list_index;
    }
    v.violations.push_back(std::move(deadlock));
  }
  return v;
}

std::optional<std::string> obviously_infeasible(const Instance& inst) {
  for (int s = 0; s < inst.num_stages(); ++s) {
    const Stage& st = inst.stages[s];
    const Device& dev = inst.devices[st.device];
    if (dev.static_memory + st.activation > dev.memory_limit + kMemoryTolerance) {
      return "no schedule can fit: stage " + std::to_string(s) + " needs static " + format_bytes(dev.static_memory) +
             " + one activation " + format_bytes(st.activation) + " = " +
             format_bytes(dev.static_memory + st.activation) + " on device " + std::to_string(st.device) +
             " > limit " + format_bytes(dev.memory_limit);
    }
  }
  return std::nullopt;
}

}  // namespace optpipe
