#include "model/validator.h"

#include <cmath>
#include <sstream>

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

}  // namespace

std::vector<Violation> check_structure(const Instance& inst, const Schedule& sch, std::size_t limit) {
  std::vector<Violation> out;
  auto add = [&](Rule rule, std::string message) {
    if (out.size() < limit) out.push_back({rule, std::move(message)});
  };
  const int D = inst.num_devices(), S = inst.num_stages(), m = inst.microbatches;
  if (sch.num_devices() != D) {
    add(Rule::kDeviceCount, "the schedule has " + std::to_string(sch.num_devices()) + " device lists, the instance " +
                                std::to_string(D) + " devices");
    return out;
  }
  // seen[type][s*m+j]: where each op was found.
  std::vector<std::vector<Seen>> seen(4, std::vector<Seen>(static_cast<std::size_t>(S) * m));
  std::vector<std::vector<int>> last_mb(4, std::vector<int>(S, -1));
  for (int d = 0; d < D; ++d) {
    const auto& list = sch.devices[d];
    for (std::size_t k = 0; k < list.size(); ++k) {
      const Action& a = list[k];
      const std::string name = to_string(a);
      const int t = static_cast<int>(a.type);
      if (a.stage >= S) {
        add(Rule::kUnknownStage, where(d, k) + ": " + name + ": stage " + std::to_string(a.stage) +
                                     " does not exist (the instance has " + std::to_string(S) + " stages)");
        continue;
      }
      if (a.mb >= m) {
        add(Rule::kUnknownMicrobatch, where(d, k) + ": " + name + ": microbatch " + std::to_string(a.mb) +
                                          " does not exist (the instance has " + std::to_string(m) + " microbatches)");
        continue;
      }
      if (a.type == OpType::W && !inst.split_backward) {
        add(Rule::kNoWeightOps, where(d, k) + ": " + name +
                                    ": the instance has no W ops (split_backward is false; B is the fused backward)");
        continue;
      }
      const int home = inst.stages[a.stage].device;
      if (home != d) {
        add(Rule::kWrongDevice, where(d, k) + ": " + name + " is on device " + std::to_string(d) + " but stage " +
                                    std::to_string(a.stage) + " is placed on device " + std::to_string(home));
      }
      Seen& s = seen[t][static_cast<std::size_t>(a.stage) * m + a.mb];
      if (s.device >= 0) {
        add(Rule::kDuplicate, where(d, k) + ": " + name + " appears twice (first at " + where(s.device, s.position) + ")");
        continue;
      }
      s = {d, k};
      // FIFO is about one list's order; an op on the wrong device is reported above and kept out
      // of it (comparing it with ops of another list would report an order that no list has).
      if (home == d) {
        if (a.mb < last_mb[t][a.stage]) {
          add(Rule::kFifo, where(d, k) + ": " + name + " comes after " + std::string(1, type_letter(a.type)) +
                               std::to_string(a.stage) + "." + std::to_string(last_mb[t][a.stage]) +
                               " (microbatches of one stage and type must be in increasing order)");
        }
        last_mb[t][a.stage] = std::max(last_mb[t][a.stage], a.mb);
      }
      if (a.type == OpType::F && a.r != 0.0) {
        if (!inst.is_offload_level(a.r)) {
          std::ostringstream r;
          r << a.r;
          add(Rule::kBadLevel, where(d, k) + ": " + name + ": " + r.str() +
                                   " is not an offload level of the instance (levels: " + levels_text(inst) + ")");
        } else if (!inst.stages[a.stage].offloadable()) {
          add(Rule::kNotOffloadable, where(d, k) + ": " + name + ": stage " + std::to_string(a.stage) +
                                         " cannot be offloaded (it has no offload/reload times)");
        }
      }
    }
  }
  const char* kTypes = "FBWR";
  const int compute_types = inst.num_compute_types();
  for (int t = 0; t < compute_types; ++t) {
    for (int s = 0; s < S; ++s) {
      for (int j = 0; j < m; ++j) {
        if (seen[t][static_cast<std::size_t>(s) * m + j].device < 0) {
          add(Rule::kMissing, std::string(1, kTypes[t]) + std::to_string(s) + "." + std::to_string(j) +
                                  " is missing (expected on device " + std::to_string(inst.stages[s].device) + ")");
        }
      }
    }
  }
  // R rules: present exactly when F has r > 0, after F and before B in the same list.
  for (int s = 0; s < S; ++s) {
    for (int j = 0; j < m; ++j) {
      const std::size_t sj = static_cast<std::size_t>(s) * m + j;
      const Seen& f = seen[0][sj];
      const Seen& b = seen[1][sj];
      const Seen& r = seen[3][sj];
      const std::string sjs = std::to_string(s) + "." + std::to_string(j);
      const bool offloaded = f.device >= 0 && sch.devices[f.device][f.position].r > 0;
      if (r.device >= 0 && !offloaded) {
        add(Rule::kReloadWithoutOffload,
            where(r.device, r.position) + ": R" + sjs + " but F" + sjs + " is not offloaded (no @r > 0)");
      } else if (offloaded && r.device < 0) {
        add(Rule::kOffloadWithoutReload, "F" + sjs + " offloads (at " + where(f.device, f.position) +
                                             ") but R" + sjs + " is missing");
      } else if (offloaded) {
        if (r.device != f.device || r.position < f.position) {
          add(Rule::kReloadOrder, where(r.device, r.position) + ": R" + sjs + " must come after F" + sjs +
                                      " in the same list (F" + sjs + " is at " + where(f.device, f.position) + ")");
        } else if (b.device >= 0 && (b.device != r.device || b.position < r.position)) {
          add(Rule::kReloadOrder, where(r.device, r.position) + ": R" + sjs + " must come before B" + sjs +
                                      " in the same list (B" + sjs + " is at " + where(b.device, b.position) + ")");
        }
      }
    }
  }
  return out;
}

Validation validate(const Instance& inst, const Schedule& sch, const SimOptions& options) {
  Validation v;
  v.violations = check_structure(inst, sch);
  if (!v.violations.empty()) return v;
  v.sim = simulate(inst, sch, options);
  if (!v.sim->feasible) v.violations.push_back({Rule::kDeadlock, "the timing does not complete: " + v.sim->reason});
  return v;
}

}  // namespace optpipe
