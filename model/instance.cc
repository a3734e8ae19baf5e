#include "model/instance.h"

#include <cmath>

namespace optpipe {

double Instance::duration(OpType type, int s) const {
  const Stage& st = stages[s];
  switch (type) {
    case OpType::F: return st.forward;
    case OpType::B: return split_backward ? st.backward : st.backward + st.weight;
    case OpType::W: return split_backward ? st.weight : 0.0;
    case OpType::R: return 0.0;
  }
  return 0.0;
}

std::vector<std::vector<int>> Instance::stages_by_device() const {
  std::vector<std::vector<int>> out(devices.size());
  for (int s = 0; s < num_stages(); ++s) out[stages[s].device].push_back(s);
  return out;
}

Placement Instance::placement() const {
  const int D = num_devices();
  const int S = num_stages();
  auto matches = [&](auto device_of) {
    for (int s = 0; s < S; ++s) {
      if (stages[s].device != device_of(s)) return false;
    }
    return true;
  };
  if (S == D && matches([](int s) { return s; })) return Placement::kOnePerDevice;
  if (S == 2 * D && matches([D](int s) { return s < D ? s : 2 * D - 1 - s; })) return Placement::kV;
  if (S > D && S % D == 0 && matches([D](int s) { return s % D; })) return Placement::kLoop;
  return Placement::kOther;
}

bool Instance::is_offload_level(double r) const {
  for (double level : offload_levels) {
    if (std::fabs(level - r) <= 1e-12) return true;
  }
  return false;
}

bool Instance::can_offload() const {
  if (offload_levels.empty() || offload_levels.back() <= 0) return false;
  for (const Stage& st : stages) {
    if (st.offloadable()) return true;
  }
  return false;
}

double Instance::work_per_microbatch(int d) const {
  double work = 0;
  for (int s = 0; s < num_stages(); ++s) {
    if (stages[s].device != d) continue;
    work += duration(OpType::F, s) + duration(OpType::B, s) + duration(OpType::W, s);
  }
  return work;
}

const char* to_string(Placement p) {
  switch (p) {
    case Placement::kOnePerDevice: return "one stage per device";
    case Placement::kV: return "V (two stages per device)";
    case Placement::kLoop: return "loop (interleaved)";
    case Placement::kOther: return "custom";
  }
  return "?";
}

}  // namespace optpipe
