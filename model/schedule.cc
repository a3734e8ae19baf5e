#include "model/schedule.h"

namespace optpipe {

std::size_t Schedule::num_actions() const {
  std::size_t n = 0;
  for (const auto& list : devices) n += list.size();
  return n;
}

bool Schedule::has_offload() const {
  for (const auto& list : devices) {
    for (const Action& a : list) {
      if (a.type == OpType::R || (a.type == OpType::F && a.r > 0)) return true;
    }
  }
  return false;
}

}  // namespace optpipe
