// The text Gantt chart (viz/gantt_text.h): microbatch numbers in decimal, never cut, never
// letters (issue 23: microbatches 10 and up were 'a', 'b', ..., which the legend's "lower case:
// a device's later stage" made ambiguous), and the widening of fitted charts for them.
#include <gtest/gtest.h>

#include <cctype>
#include <sstream>
#include <string>
#include <vector>

#include "model/simulator.h"
#include "tests/test_util.h"
#include "viz/gantt_text.h"

namespace optpipe {
namespace {

// Two devices, 12 microbatches, 1 ms ops: GPipe-like lists (device 0: every F, then B and W per
// microbatch; device 1: F, B, W per microbatch).
struct Twelve {
  Instance inst = test_support::uniform_instance(2, 12, 1, 1, 1);
  Schedule sch;
  SimResult sim;
  Twelve() {
    std::vector<std::vector<std::string>> l(2);
    for (int j = 0; j < 12; ++j) l[0].push_back("F0." + std::to_string(j));
    for (int j = 0; j < 12; ++j) {
      l[0].push_back("B0." + std::to_string(j)), l[0].push_back("W0." + std::to_string(j));
      for (const char* t : {"F1.", "B1.", "W1."}) l[1].push_back(t + std::to_string(j));
    }
    sch = test_support::lists(inst, l);
    sim = simulate(inst, sch);
  }
  std::string chart(double quantum, int width = 100) const {
    TextGanttOptions o;
    o.quantum = quantum;
    o.width = width;
    return render_text_gantt(inst, sch, sim, o);
  }
};

// The rows' cells (after '|'), one string per row.
std::vector<std::string> cells(const std::string& chart) {
  std::vector<std::string> rows;
  std::istringstream in(chart);
  for (std::string line; std::getline(in, line);) rows.push_back(line.substr(line.find('|') + 1));
  return rows;
}

TEST(GanttText, TwoDigitMicrobatchesAreNumbers) {
  const Twelve t;
  ASSERT_TRUE(t.sim.feasible) << t.sim.reason;
  const std::string chart = t.chart(1.0 / 3);  // three columns per op: room for "F11"
  for (const char* label : {"F10", "F11", "B11", "W11", "F9-"}) {
    EXPECT_NE(chart.find(label), std::string::npos) << label << " not in\n" << chart;
  }
  for (const std::string& row : cells(chart)) {
    for (char c : row) {  // no letter digits: lower case only as f, b, w (none here: one stage each)
      EXPECT_TRUE(std::isdigit(static_cast<unsigned char>(c)) || std::string("FBW.-").find(c) != std::string::npos)
          << "'" << c << "' in\n" << chart;
    }
  }
}

TEST(GanttText, ANumberThatDoesNotFitIsLeftOutNotCut) {
  const Twelve t;
  const std::string chart = t.chart(0.5);  // two columns per op: "F9" fits, "F11" does not
  EXPECT_NE(chart.find("F9"), std::string::npos) << chart;
  EXPECT_EQ(chart.find("Fa"), std::string::npos) << chart;
  EXPECT_EQ(chart.find("Fb"), std::string::npos) << chart;
  // Device 1 runs F1.11 from 12 + 2 * 11 = 34 ms... its two columns show the letter alone.
  const std::string row1 = cells(chart)[1];
  const int start = static_cast<int>(t.sim.timeline[1][33].start / 0.5 + 0.5);
  EXPECT_EQ(row1.substr(start, 2), "F-") << chart;
}

TEST(GanttText, FittedChartsWidenForTheNumbers) {
  const Twelve t;
  const int width = 80;  // about 1.7 columns per ms: two-digit labels need 3
  const std::string chart = t.chart(0, width);
  EXPECT_NE(chart.find("F11"), std::string::npos) << chart;
  EXPECT_NE(chart.find("W11"), std::string::npos) << chart;
  for (const std::string& row : cells(chart)) EXPECT_LE(row.size(), 2u * width) << chart;
  TextGanttOptions narrow;
  narrow.width = width;
  narrow.max_widen = 1;  // no widening: the numbers that do not fit are left out
  const std::string same = render_text_gantt(t.inst, t.sch, t.sim, narrow);
  EXPECT_EQ(same.find("F11"), std::string::npos) << same;
  for (const std::string& row : cells(same)) EXPECT_EQ(row.size(), static_cast<std::size_t>(width)) << same;
}

}  // namespace
}  // namespace optpipe
