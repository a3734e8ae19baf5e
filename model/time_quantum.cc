#include "model/time_quantum.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

#include "model/simulator.h"

namespace optpipe {

namespace {

constexpr int kMaxDecimals = 4;         // 10^-4 ms = kMinTimeQuantum
// Relative: a number written with k decimals and read as the nearest double is within a few
// ulps of a whole number of 10^-k (1.45 · 100 = 144.99999999999997); anything further is not.
constexpr double kWholeTolerance = 1e-12;
// quantum_ceil's tolerance: kTimeEps (simulator.h) plus this much of the value: a bound summed
// along a path of n ops carries about n·2^-53 of itself in rounding, and paths here are at most
// about 10^5 ops.
constexpr double kRelativeNoise = 1e-10;
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

// Every makespan is at most the sum of every op's duration, every transfer at the largest level
// and every comm there and back: the times are that sum at most (nothing waits but for an end).
double horizon(const Instance& inst) {
  const double m = inst.microbatches;
  const double r = inst.offload_levels.empty() ? 0.0 : inst.offload_levels.back();
  double h = 0;
  for (const Stage& st : inst.stages) {
    h += m * (st.forward + st.backward + st.weight);
    if (st.offloadable()) h += m * r * (*st.offload + *st.reload);
  }
  for (double c : inst.comm) h += 2 * m * c;
  return h;
}

}  // namespace

double time_quantum(const Instance& instance) {
  const std::vector<double> times = added_times(instance);
  // The rounding noise of a time as large as the horizon must stay far below half a quantum (a
  // bound off by it would cut a node that holds a schedule one quantum better).
  const double noise = kTimeEps + kRelativeNoise * horizon(instance);
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
    if (!whole) continue;
    const double q = g > 0 ? static_cast<double>(g) / scale : 0.0;
    return q > 0 && 100 * noise <= q ? q : 0.0;
  }
  return 0;
}

double quantum_ceil(double b, double q) {
  if (!(q > 0) || !std::isfinite(b)) return b;
  return std::ceil((b - kTimeEps - kRelativeNoise * std::fabs(b)) / q) * q;
}

double quantum_floor(double t, double q) {
  if (!(q > 0) || !std::isfinite(t)) return t;
  return std::floor((t + kFloorTolerance) / q) * q;
}

}  // namespace optpipe
