// Random sweeps as value-parameterised tests: TEST_P over ranges of one sweep's cases.
//
// A sweep draws its cases one after another from one engine with a fixed seed, so case i
// depends on every draw before it. The test of the range [begin, end) still draws every case
// before `end` but checks only its own (the loop skips the checks of the others after their
// draws), so each range checks exactly the cases the whole sweep would, and together the ranges
// check all of them once. A failure names its range in the test's name, and its case in the
// message.
//
// A sweep's coverage floors ("more than 100 of the cases were feasible") hold in every range
// with the range's share of the floor, share(floor) = floor x range size / sweep size, rounded
// up, in place of the floor, and the same comparison. The shares add up to at least the floor,
// so the ranges passing together imply the whole sweep's floor: no floor is weaker than it was.
#pragma once

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

namespace optpipe::test_support {

struct CaseRange {
  int begin = 0, end = 0;  // the cases [begin, end) ...
  int total = 0;           // ... of a sweep of this many
  int size() const { return end - begin; }
  bool contains(int i) const { return i >= begin && i < end; }
  // This range's share of a floor on a count over the whole sweep (see above).
  int share(long long floor) const {
    return static_cast<int>((floor * size() + total - 1) / total);
  }
};

// The cases [0, total) in `parts` consecutive ranges whose sizes differ by at most one.
inline std::vector<CaseRange> case_ranges(int total, int parts) {
  std::vector<CaseRange> out;
  for (int k = 0; k < parts; ++k) out.push_back({total * k / parts, total * (k + 1) / parts, total});
  return out;
}

// The parameter's part of the test's name: "cases_0_to_99" (both ends included).
inline std::string case_range_name(const testing::TestParamInfo<CaseRange>& info) {
  return "cases_" + std::to_string(info.param.begin) + "_to_" + std::to_string(info.param.end - 1);
}

// How GoogleTest prints the parameter: "cases 0 to 99 of 600".
inline void PrintTo(const CaseRange& r, std::ostream* os) {
  *os << "cases " << r.begin << " to " << r.end - 1 << " of " << r.total;
}

// The fixture of a sweep over case ranges. Each sweep needs a test suite of its own (its
// ranges are its own), so each names it with an alias: using MySweep = CaseRangeTest.
using CaseRangeTest = testing::TestWithParam<CaseRange>;

}  // namespace optpipe::test_support
