// The text reports (viz/text_report.h): numbers that are not finite print as "-", never
// "inf ms" or "-nan%" (issue 23: `schedule` printed "inf ms -nan%" for a 1e308 ms forward).
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "tests/test_util.h"
#include "viz/text_report.h"

namespace optpipe {
namespace {

TEST(TextReport, NonFiniteNumbersPrintAsADash) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(fmt_ms(12.3456), "12.346 ms");
  EXPECT_EQ(fmt_percent(0.282), "28.2%");
  EXPECT_EQ(fmt_ms(inf), "-");
  EXPECT_EQ(fmt_ms(-inf), "-");
  EXPECT_EQ(fmt_percent(nan), "-");
}

TEST(TextReport, SummaryOfAnInfiniteMakespanHasNoInfOrNan) {
  const Instance inst = test_support::uniform_instance(2, 2, 1, 1, 1);
  SimResult sim;
  sim.feasible = true;
  sim.makespan = std::numeric_limits<double>::infinity();
  sim.bubble = std::numeric_limits<double>::quiet_NaN();
  sim.busy = {1, 1};
  sim.peak_memory = {0, 0};
  const std::string text = summarize(inst, sim);
  EXPECT_EQ(text.find("inf"), std::string::npos) << text;
  EXPECT_EQ(text.find("nan"), std::string::npos) << text;
  EXPECT_NE(text.find("makespan -, bubble -"), std::string::npos) << text;
}

}  // namespace
}  // namespace optpipe
