#include "model/time_quantum.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

namespace optpipe {

namespace {

constexpr int kMaxDecimals = 4;         // 10^-4 ms = kMinTimeQuantum
// Relative: a number written with k decimals and read as the nearest double is within a few
// ulps of a whole number of 10^-k (1.45 · 100 = 144.99999999999997); anything further is not.
constexpr double kWholeTolerance = 1e-12;
constexpr double kCeilTolerance = 1e-9;   // ms: kTimeEps (simulator.h)
constexpr double kFloorTolerance = 1e-10; // ms: below kTimeEps, so a target 2·kTimeEps below a multiple stays below it

std::vector<double> added_times(const Instance& inst) {
  std::vector<double> v;
  for (const Stage& st : inst.stages) {
    v.push_back(st.forward);
    v.push_back(st.backward);
    v.push_back(st.weight);
    if (!inst.split_backward) v.push_back(st.backward + st.weight);
    if (st.offloadable()) {
      for (double r : inst.offload_levels) {
        v.push_back(r * *st.offload);
        v.push_back(r * *st.reload);
      }
    }
  }
  for (double c : inst.comm) v.push_back(c);
  return v;
}

}  // namespace

double time_quantum(const Instance& instance) {
  const std::vector<double> times = added_times(instance);
  double scale = 1;
  for (int k = 0; k <= kMaxDecimals; ++k, scale *= 10) {
    bool whole = true;
    std::int64_t g = 0;
    for (double t : times) {
      const double x = t * scale;
      const double n = std::round(x);
      if (!(std::fabs(x - n) <= kWholeTolerance * std::max(1.0, std::fabs(x))) || n > 9e15) {
        whole = false;
        break;
      }
      g = std::gcd(g, static_cast<std::int64_t>(std::fabs(n)));
    }
    if (whole) return g > 0 ? static_cast<double>(g) / scale : 0.0;
  }
  return 0;
}

double quantum_ceil(double b, double q) {
  if (!(q > 0) || !std::isfinite(b)) return b;
  return std::ceil((b - kCeilTolerance) / q) * q;
}

double quantum_floor(double t, double q) {
  if (!(q > 0) || !std::isfinite(t)) return t;
  return std::floor((t + kFloorTolerance) / q) * q;
}

}  // namespace optpipe
