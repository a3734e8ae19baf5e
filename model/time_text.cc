#include "model/time_text.h"

#include <cmath>
#include <cstdio>

namespace optpipe {

std::string fmt_ms(double ms) {
  if (!std::isfinite(ms)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f ms", ms);
  return buf;
}

}  // namespace optpipe
