// The frontier's SVG chart (viz/frontier_svg.h): self-contained, axes with units, one marker per
// point and per classic schedule where their numbers put them, the floor, escaped text.
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "viz/frontier_svg.h"

namespace optpipe {
namespace {

using test_support::GiB;

FrontierChart sample_chart() {
  FrontierChart c;
  c.title = "demo <&> frontier";
  c.subtitle = "4 limits";
  c.points = {{8 * GiB, 2000, 1900, false}, {12 * GiB, 760, 660, false}, {16 * GiB, 650, 640, true},
              {20 * GiB, 615, 615, false}};
  c.marks = {{"1F1B", 17 * GiB, 680}, {"ZB<H1>", 17.2 * GiB, 646}};
  c.floor = 7.4 * GiB;
  c.floor_label = "memory floor 7.40 GiB";
  return c;
}

std::vector<double> attribute_values(const std::string& svg, const std::string& element_class,
                                     const std::string& attribute) {
  std::vector<double> out;
  const std::regex re("class=\"" + element_class + "\"[^>]*?" + attribute + "=\"([0-9.]+)\"");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator(); ++it) {
    out.push_back(std::stod((*it)[1]));
  }
  return out;
}

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

TEST(FrontierSvg, SelfContainedWithAxesInUnits) {
  const std::string svg = render_frontier_svg(sample_chart());
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  EXPECT_EQ(count(svg, "<text"), count(svg, "</text>"));
  EXPECT_EQ(count(svg, "http"), 1u) << "only the SVG namespace: no external resources";
  EXPECT_EQ(count(svg, "<script"), 0u);
  EXPECT_NE(svg.find(">memory limit per GPU (GiB)</text>"), std::string::npos);
  EXPECT_NE(svg.find(">makespan (ms)</text>"), std::string::npos);
  EXPECT_NE(svg.find("demo &lt;&amp;&gt; frontier"), std::string::npos);
  EXPECT_NE(svg.find(">ZB&lt;H1&gt;</text>"), std::string::npos);
  EXPECT_EQ(svg.find("ZB<H1>"), std::string::npos);
  EXPECT_NE(svg.find(">memory floor 7.40 GiB</text>"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"floor\""), 1u);
}

TEST(FrontierSvg, MarkersWhereTheNumbersPutThem) {
  const FrontierChart c = sample_chart();
  const std::string svg = render_frontier_svg(c);
  const std::vector<double> cx = attribute_values(svg, "makespan", "cx"), cy = attribute_values(svg, "makespan", "cy");
  ASSERT_EQ(cx.size(), c.points.size());
  ASSERT_EQ(cy.size(), c.points.size());
  for (std::size_t k = 1; k < cx.size(); ++k) {
    EXPECT_GT(cx[k], cx[k - 1]) << "more memory, further right";
    EXPECT_GT(cy[k], cy[k - 1]) << "faster, lower on the chart (larger y)";
  }
  // Equal spacing in memory, equal spacing in pixels.
  EXPECT_NEAR(cx[2] - cx[1], cx[1] - cx[0], 0.2);
  EXPECT_EQ(count(svg, "<polygon class=\"classic\""), 2u);
  EXPECT_EQ(count(svg, "class=\"bound\""), 4u);
  // The carried point is hollow.
  EXPECT_EQ(count(svg, "fill=\"#FFFFFF\" stroke=\"#4477AA\""), 1u);
  // The best-known line steps down at ZB-H1's peak (17.2 GiB, 646 ms), inside the range: one more
  // step than the grid alone has (3 drops between 4 points, and 1F1B is not faster than 650).
  const std::smatch path = [&] {
    std::smatch m;
    std::regex_search(svg, m, std::regex("class=\"makespan-line\" d=\"([^\"]+)\""));
    return m;
  }();
  ASSERT_FALSE(path.empty());
  EXPECT_EQ(count(path[1].str(), "V"), 4u) << path[1].str();
}

TEST(FrontierSvg, NoPointsStillDrawsAxes) {
  FrontierChart c;
  c.title = "empty";
  const std::string svg = render_frontier_svg(c);
  EXPECT_NE(svg.find(">makespan (ms)</text>"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"makespan\""), 0u);
}

}  // namespace
}  // namespace optpipe
