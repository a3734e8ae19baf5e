// Reservations on one PCIe channel for a plan (periodic_memory_plan.h): busy intervals that never
// overlap, the earliest gap of a given length from a time on, the latest one ending by a time.
// Complexity: O(n) per query or booking, n the intervals booked.
#pragma once

#include <utility>
#include <vector>

namespace optpipe {

class ChannelBook {
 public:
  // The earliest start >= lo of a free interval of length len.
  double earliest_fit(double lo, double len) const;
  // The latest start of a free interval of length len that ends by hi.
  double latest_fit(double hi, double len) const;
  // Books [start, start + len); it must be free (earliest_fit / latest_fit).
  void book(double start, double len);
  const std::vector<std::pair<double, double>>& busy() const { return busy_; }

 private:
  std::vector<std::pair<double, double>> busy_;  // sorted, disjoint
};

}  // namespace optpipe
