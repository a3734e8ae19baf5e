#include "heuristics/channel_book.h"

#include <algorithm>

namespace optpipe {

namespace {
constexpr double kEps = 1e-9;
}

double ChannelBook::earliest_fit(double lo, double len) const {
  double start = lo;
  for (const auto& [s, e] : busy_) {
    if (e <= start + kEps) continue;
    if (s >= start + len - kEps) break;
    start = e;
  }
  return start;
}

double ChannelBook::latest_fit(double hi, double len) const {
  double end = hi;
  for (auto it = busy_.rbegin(); it != busy_.rend(); ++it) {
    if (it->first >= end - kEps) continue;
    if (it->second <= end - len + kEps) break;
    end = it->first;
  }
  return end - len;
}

void ChannelBook::book(double start, double len) {
  const std::pair<double, double> iv{start, start + len};
  busy_.insert(std::upper_bound(busy_.begin(), busy_.end(), iv), iv);
}

}  // namespace optpipe
