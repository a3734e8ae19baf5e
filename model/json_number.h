// Numbers in the JSON reports (docs/json.md): a value that is not finite (the makespan of no
// schedule, the bubble of a deadlock, a gap not yet known) is null, never a string or a huge
// number.
#pragma once

#include <cmath>

#include <nlohmann/json.hpp>

namespace optpipe {

inline nlohmann::json finite_or_null(double x) {
  return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr);
}

}  // namespace optpipe
