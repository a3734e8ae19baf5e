#include "viz/gantt_svg.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "model/bytes.h"
#include "model/simulator.h"
#include "tests/test_util.h"

namespace optpipe {
namespace {

using test_support::GiB;

int count(std::string_view text, std::string_view needle) {
  int n = 0;
  for (std::size_t at = text.find(needle); at != std::string_view::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

std::string xml_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// A tiny XML checker: every opened tag is closed in order, attribute values are quoted, and every
// '&' starts an entity (CDATA sections are skipped). Returns "" when well-formed, else what is wrong.
std::string xml_problem(std::string_view xml) {
  std::vector<std::string> open;
  std::size_t i = 0;
  int roots = 0;
  while (i < xml.size()) {
    if (xml[i] == '&') {
      const std::size_t semi = xml.find(';', i);
      const std::string_view entity = xml.substr(i, semi == std::string_view::npos ? 8 : semi - i + 1);
      const bool known = entity == "&amp;" || entity == "&lt;" || entity == "&gt;" || entity == "&quot;" ||
                         entity == "&apos;" || entity.substr(0, 2) == "&#";
      if (!known) return "bad entity at " + std::to_string(i) + ": " + std::string(entity);
      ++i;
      continue;
    }
    if (xml[i] == '>') return "stray '>' at " + std::to_string(i);
    if (xml[i] != '<') {
      ++i;
      continue;
    }
    if (xml.substr(i, 9) == "<![CDATA[") {  // the script
      const std::size_t end = xml.find("]]>", i);
      if (end == std::string_view::npos) return "unterminated CDATA section";
      i = end + 3;
      continue;
    }
    if (xml.substr(i, 2) == "<?" || xml.substr(i, 4) == "<!--") {
      const std::size_t end = xml.find(xml[i + 1] == '?' ? "?>" : "-->", i);
      if (end == std::string_view::npos) return "unterminated declaration or comment";
      i = end + 2;
      continue;
    }
    // Find the tag's end, skipping quoted attribute values.
    std::size_t j = i + 1;
    char quote = 0;
    for (; j < xml.size(); ++j) {
      if (quote) {
        if (xml[j] == quote)
          quote = 0;
        else if (xml[j] == '<')
          return "'<' inside an attribute value at " + std::to_string(j);
      } else if (xml[j] == '"' || xml[j] == '\'') {
        quote = xml[j];
      } else if (xml[j] == '>') {
        break;
      } else if (xml[j] == '<') {
        return "'<' inside a tag at " + std::to_string(j);
      }
    }
    if (j >= xml.size()) return "unterminated tag at " + std::to_string(i);
    const std::string_view tag = xml.substr(i + 1, j - i - 1);
    const bool closing = tag.front() == '/', self_closing = tag.back() == '/';
    const std::string_view body = closing ? tag.substr(1) : tag;
    const std::string name(body.substr(0, body.find_first_of(" \t\n/")));
    if (name.empty()) return "empty tag name at " + std::to_string(i);
    if (closing) {
      if (open.empty() || open.back() != name) {
        return "</" + name + "> closes <" + (open.empty() ? std::string("nothing") : open.back()) + ">";
      }
      open.pop_back();
    } else if (!self_closing) {
      if (open.empty()) ++roots;
      open.push_back(name);
    } else if (open.empty()) {
      ++roots;
    }
    i = j + 1;
  }
  if (!open.empty()) return "<" + open.back() + "> is never closed";
  if (roots != 1) return std::to_string(roots) + " root elements";
  return "";
}

// 1F1B lists: min(p-s-1, m) warm-up forwards, then (F, B, W) steps, then the remaining (B, W).
// When `offload_stage0` is set, stage 0 offloads every F fully and reloads just before the step
// in which its B runs.
Schedule one_f_one_b(const Instance& inst, bool offload_stage0 = false) {
  const int p = inst.num_stages(), m = inst.microbatches;
  std::vector<std::vector<std::string>> lists(static_cast<std::size_t>(inst.num_devices()));
  for (int s = 0; s < p; ++s) {
    auto& list = lists[static_cast<std::size_t>(inst.stages[s].device)];
    const bool off = offload_stage0 && s == 0;
    auto op = [s](char type, int j) {
      return std::string(1, type) + std::to_string(s) + "." + std::to_string(j);
    };
    int f = 0;
    for (; f < std::min(p - s - 1, m); ++f) list.push_back(op('F', f) + (off ? "@1" : ""));
    for (int b = 0; b < m; ++b) {
      if (off) list.push_back(op('R', b));
      if (f < m) list.push_back(op('F', f++) + (off ? "@1" : ""));
      list.push_back(op('B', b));
      if (inst.split_backward) list.push_back(op('W', b));
    }
  }
  return test_support::lists(inst, lists);
}

Instance offloadable(Instance inst) {
  for (Stage& st : inst.stages) {
    st.offload = 0.6;
    st.reload = 0.6;
  }
  return inst;
}

// The SVG without its tooltips (<title> elements): what a reader sees without hovering.
std::string without_tooltips(std::string svg) {
  for (std::size_t at = svg.find("<title>"); at != std::string::npos; at = svg.find("<title>", at)) {
    svg.erase(at, svg.find("</title>", at) + 8 - at);
  }
  return svg;
}

std::string svg_fixed2(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

struct OpBox {
  std::string name;  // "F0.3"
  double x = 0, start = 0;
};

// The op rectangles in document order, with their x and the start time of their tooltip.
std::vector<OpBox> op_boxes(const std::string& svg) {
  std::vector<OpBox> out;
  for (std::size_t at = svg.find("class=\"op "); at != std::string::npos;
       at = svg.find("class=\"op ", at + 1)) {
    OpBox box;
    const std::size_t x = svg.find(" x=\"", svg.rfind("<rect ", at));
    if (x == std::string::npos) break;
    box.x = std::strtod(svg.c_str() + x + 4, nullptr);
    const std::size_t title = svg.find("<title>", at);
    const std::size_t on = svg.find(" on ", title);
    const std::size_t colon = svg.find(": ", on);
    if (title == std::string::npos || on == std::string::npos || colon == std::string::npos) break;
    box.name = svg.substr(title + 7, on - title - 7);
    box.start = std::strtod(svg.c_str() + colon + 2, nullptr);
    out.push_back(box);
  }
  return out;
}

TEST(GanttSvg, OutputIsWellFormedSelfContainedSvg) {
  const Instance inst = test_support::uniform_instance(3, 4, 1.0, 1.0, 0.5, 0.1);
  const Schedule sch = one_f_one_b(inst);
  const SimResult sim = simulate(inst, sch);
  ASSERT_TRUE(sim.feasible) << sim.reason;
  const std::string svg = render_svg_gantt(inst, sch, sim);
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("<svg xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
  EXPECT_NE(svg.find("viewBox=\"0 0 1400.0 "), std::string::npos);
  // One inline script (pan, zoom, sticky labels), nothing fetched from anywhere.
  EXPECT_EQ(count(svg, "<script type=\"application/ecmascript\"><![CDATA["), 1);
  EXPECT_EQ(count(svg, "</script>"), 1);
  EXPECT_EQ(svg.find("href"), std::string::npos);
  EXPECT_EQ(svg.find("url("), std::string::npos);
  EXPECT_EQ(count(svg, "http"), 2);  // the SVG namespace, on the root and in the script's createElementNS
  EXPECT_EQ(count(svg, "http://www.w3.org/2000/svg"), 2);
  for (const char* layer : {"gantt-scroll", "gantt-captions", "gantt-axis", "gantt-fixed"}) {
    EXPECT_EQ(count(svg, std::string("<g id=\"") + layer + "\">"), 1) << layer;  // what the script moves
  }
  SvgGanttOptions still;
  still.script = false;
  const std::string plain = render_svg_gantt(inst, sch, sim, still);
  EXPECT_EQ(plain.find("<script"), std::string::npos);
  EXPECT_EQ(xml_problem(plain), "");
  EXPECT_EQ(plain, svg.substr(0, svg.find("<script")) + "</svg>\n");  // the same picture otherwise
  for (int d = 0; d < 3; ++d) EXPECT_NE(svg.find(">GPU " + std::to_string(d) + "<"), std::string::npos);
  EXPECT_NE(svg.find("uniform-3x4"), std::string::npos);
  EXPECT_NE(svg.find("feasible"), std::string::npos);
  EXPECT_NE(svg.find("class=\"makespan\""), std::string::npos);
  // A second width changes the picture's size.
  SvgGanttOptions narrow;
  narrow.width = 700;
  const std::string small = render_svg_gantt(inst, sch, sim, narrow);
  EXPECT_EQ(xml_problem(small), "");
  EXPECT_NE(small.find("viewBox=\"0 0 700.0 "), std::string::npos);
}

TEST(GanttSvg, TitleShowsMakespanBubbleAndCustomTitle) {
  const Instance inst = test_support::uniform_instance(2, 2, 1.0, 1.0, 1.0);
  const Schedule sch = one_f_one_b(inst);
  const SimResult sim = simulate(inst, sch);
  ASSERT_TRUE(sim.feasible);
  char expected[64];
  std::snprintf(expected, sizeof expected, "makespan %.2f ms", sim.makespan);
  std::string svg = render_svg_gantt(inst, sch, sim);
  EXPECT_NE(svg.find(expected), std::string::npos);
  std::snprintf(expected, sizeof expected, "bubble %.1f%%", sim.bubble * 100);
  EXPECT_NE(svg.find(expected), std::string::npos);
  SvgGanttOptions options;
  options.title = "My <best> schedule";
  svg = render_svg_gantt(inst, sch, sim, options);
  EXPECT_NE(svg.find("My &lt;best&gt; schedule"), std::string::npos);
  EXPECT_NE(svg.find("uniform-2x2"), std::string::npos);  // the default line follows a custom title
  EXPECT_EQ(xml_problem(svg), "");
}

TEST(GanttSvg, OneRectanglePerComputeAction) {
  Instance inst = test_support::uniform_instance(4, 6, 1.0, 1.2, 0.8, 0.05);
  Schedule sch = one_f_one_b(inst);
  SimResult sim = simulate(inst, sch);
  ASSERT_TRUE(sim.feasible) << sim.reason;
  std::string svg = render_svg_gantt(inst, sch, sim);
  EXPECT_EQ(count(svg, "class=\"op F\""), 24);
  EXPECT_EQ(count(svg, "class=\"op B\""), 24);
  EXPECT_EQ(count(svg, "class=\"op W\""), 24);
  EXPECT_EQ(count(svg, "class=\"op "), static_cast<int>(sch.num_actions()));
  EXPECT_EQ(count(svg, "W backward"), 1);  // legend

  inst.split_backward = false;  // fused backward: no W ops, no W in the legend
  sch = one_f_one_b(inst);
  sim = simulate(inst, sch);
  ASSERT_TRUE(sim.feasible) << sim.reason;
  svg = render_svg_gantt(inst, sch, sim);
  EXPECT_EQ(count(svg, "class=\"op "), 48);
  EXPECT_EQ(count(svg, "class=\"op W\""), 0);
  EXPECT_EQ(count(svg, "W backward"), 0);
  EXPECT_EQ(xml_problem(svg), "");
}

TEST(GanttSvg, TooltipsNameOpDeviceTimesAndOffload) {
  const Instance inst = offloadable(test_support::uniform_instance(1, 1, 1.0, 2.0, 0.5));
  const Schedule sch = test_support::lists(inst, {{"F0.0@1", "R0.0", "B0.0", "W0.0"}});
  const SimResult sim = simulate(inst, sch);
  ASSERT_TRUE(sim.feasible) << sim.reason;
  const std::string svg = render_svg_gantt(inst, sch, sim);
  EXPECT_NE(
      svg.find("<title>F0.0 on GPU 0: 0.00\u20131.00 ms (stage 0, microbatch 0), offloads 100%</title>"),
      std::string::npos)
      << svg;
  EXPECT_NE(svg.find("<title>W0.0 on GPU 0: "), std::string::npos);
}

TEST(GanttSvg, TransfersAppearWhenTheScheduleOffloads) {
  Instance inst = offloadable(test_support::uniform_instance(2, 2, 1.0, 1.0, 0.5));
  inst.offload_levels = {0.0, 0.5, 1.0};
  const Schedule sch =
      test_support::lists(inst, {{"F0.0@0.5", "F0.1@1", "R0.0", "B0.0", "W0.0", "R0.1", "B0.1", "W0.1"},
                            {"F1.0", "B1.0", "W1.0", "F1.1", "B1.1", "W1.1"}});
  const SimResult sim = simulate(inst, sch);
  ASSERT_TRUE(sim.feasible) << sim.reason;
  ASSERT_EQ(sim.transfers.size(), 4u);
  const std::string svg = render_svg_gantt(inst, sch, sim);
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_EQ(count(svg, "class=\"xfer d2h\""), 2);
  EXPECT_EQ(count(svg, "class=\"xfer h2d\""), 2);
  EXPECT_EQ(count(svg, ">D2H<"), 1);  // one lane each, under GPU 0 only
  EXPECT_EQ(count(svg, ">H2D<"), 1);
  EXPECT_NE(svg.find(format_bytes(GiB / 2) + " (50% of the activation); requested"), std::string::npos);
  EXPECT_NE(svg.find(format_bytes(GiB) + " (100% of the activation); requested"), std::string::npos);
  EXPECT_NE(svg.find("offloads 50%"), std::string::npos);

  SvgGanttOptions no_lanes;
  no_lanes.transfers = false;
  const std::string plain = render_svg_gantt(inst, sch, sim, no_lanes);
  EXPECT_EQ(count(plain, "class=\"xfer"), 0);
  EXPECT_EQ(count(plain, ">D2H<"), 0);
  EXPECT_LT(plain.size(), svg.size());

  const Schedule no_offload = one_f_one_b(inst);
  const std::string none = render_svg_gantt(inst, no_offload, simulate(inst, no_offload));
  EXPECT_EQ(count(none, "class=\"xfer"), 0);
  EXPECT_EQ(count(none, ">D2H<"), 0);
}

TEST(GanttSvg, MemoryChartHasOneLimitLinePerDeviceAndThePeak) {
  Instance inst = test_support::uniform_instance(3, 4, 1.0, 1.0, 1.0, 0.0, GiB, GiB / 2, 10 * GiB);
  for (Device& dev : inst.devices) dev.static_memory = 4 * GiB;
  const Schedule sch = one_f_one_b(inst);
  const SimResult sim = simulate(inst, sch);
  ASSERT_TRUE(sim.feasible) << sim.reason;
  std::string svg = render_svg_gantt(inst, sch, sim);
  EXPECT_EQ(count(svg, "class=\"limit\""), 3);
  EXPECT_EQ(count(svg, "class=\"static\""), 3);
  EXPECT_EQ(count(svg, "<path class=\"memory\""), 3);
  for (int d = 0; d < 3; ++d) {
    const std::string peak =
        "peak " + format_bytes(sim.peak_memory[d]) + " / limit " + format_bytes(10 * GiB);
    EXPECT_NE(svg.find(peak), std::string::npos) << peak;
  }
  EXPECT_EQ(count(svg, "(off scale)"), 0);

  SvgGanttOptions no_memory;
  no_memory.memory = false;
  svg = render_svg_gantt(inst, sch, sim, no_memory);
  EXPECT_EQ(count(svg, "class=\"limit\""), 0);
  EXPECT_EQ(count(svg, "class=\"memory\""), 0);
  EXPECT_EQ(xml_problem(svg), "");
}

TEST(GanttSvg, UnlimitedMemoryIsMarkedOffScale) {
  const Instance inst = test_support::uniform_instance(2, 2, 1.0, 1.0, 1.0);  // limit 1e18 bytes
  const Schedule sch = one_f_one_b(inst);
  const std::string svg = render_svg_gantt(inst, sch, simulate(inst, sch));
  EXPECT_EQ(count(svg, "class=\"limit\""), 2);
  EXPECT_EQ(count(svg, "(off scale)"), 2);
}

TEST(GanttSvg, EscapesSpecialCharactersInNames) {
  Instance inst = test_support::uniform_instance(2, 2, 1.0, 1.0, 1.0);
  inst.name = "a<b & \"c\" > 'd'";
  Schedule sch = one_f_one_b(inst);
  sch.solver = "heuristic <1F1B> & friends";
  const std::string svg = render_svg_gantt(inst, sch, simulate(inst, sch));
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_NE(svg.find("a&lt;b &amp; &quot;c&quot; &gt; &#39;d&#39;"), std::string::npos);
  EXPECT_NE(svg.find("heuristic &lt;1F1B&gt; &amp; friends"), std::string::npos);
  EXPECT_EQ(svg.find("a<b"), std::string::npos);
  EXPECT_EQ(svg.find("<1F1B>"), std::string::npos);
}

TEST(GanttSvg, ShowsWhatTheSolverProvedInOneWording) {
  const Instance inst = test_support::uniform_instance(2, 2, 1.0, 1.0, 1.0);
  Schedule sch = one_f_one_b(inst);
  const SimResult sim = simulate(inst, sch);
  // The status is said once, in the title line; the line under it names the schedule's origin.
  auto status_of = [&](const std::string& svg) {
    const std::size_t at = svg.find("class=\"status\"");
    if (at == std::string::npos) return std::string("(none)");
    const std::size_t open = svg.find(">", at) + 1;
    return svg.substr(open, svg.find("</tspan>", open) - open);
  };
  const std::string heuristic = without_tooltips(render_svg_gantt(inst, sch, sim));  // no bound: just feasible
  EXPECT_EQ(status_of(heuristic), "feasible");
  EXPECT_EQ(count(heuristic, "class=\"status\""), 1);
  EXPECT_EQ(heuristic.find("lower bound"), std::string::npos);
  sch.status = "feasible";
  sch.bound = 4.5;
  sch.gap = 0.125;
  const std::string open = without_tooltips(render_svg_gantt(inst, sch, sim));
  EXPECT_EQ(status_of(open), "feasible, gap 12.50% (lower bound 4.50 ms)");
  EXPECT_EQ(count(open, "lower bound"), 1);
  EXPECT_EQ(count(open, "gap "), 1);
  sch.status = "optimal";
  const std::string proven = without_tooltips(render_svg_gantt(inst, sch, sim));
  EXPECT_EQ(status_of(proven), "proven optimal");
  EXPECT_EQ(count(proven, "optimal"), 1);
  EXPECT_EQ(proven.find("lower bound"), std::string::npos);
  EXPECT_EQ(count(proven, ">feasible"), 0);
  // A custom title moves the default line, status included, under it: still said once.
  SvgGanttOptions titled;
  titled.title = "solved";
  EXPECT_EQ(count(without_tooltips(render_svg_gantt(inst, sch, sim, titled)), "optimal"), 1);
  // A bound without a gap: the gap is worked out from the makespan.
  sch.status = "feasible";
  sch.gap.reset();
  sch.bound = sim.makespan / 2;
  EXPECT_EQ(status_of(without_tooltips(render_svg_gantt(inst, sch, sim))),
            "feasible, gap 50.00% (lower bound " + svg_fixed2(sim.makespan / 2) + " ms)");
}

TEST(GanttSvg, InfeasibleSimulationStillRendersWithItsReason) {
  // Device 0 must hold two activations before its first backward, but only one fits.
  const Instance inst = test_support::uniform_instance(2, 2, 1.0, 1.0, 1.0, 0.0, GiB, GiB / 2, 1.5 * GiB);
  const Schedule sch = one_f_one_b(inst);
  const SimResult sim = simulate(inst, sch);
  ASSERT_FALSE(sim.feasible);
  ASSERT_FALSE(sim.reason.empty());
  std::string svg = render_svg_gantt(inst, sch, sim);
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_NE(svg.find("INFEASIBLE"), std::string::npos);
  EXPECT_EQ(svg.find(">feasible"), std::string::npos);
  EXPECT_NE(svg.find(xml_escape(sim.reason)), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"limit\""), 2);
  EXPECT_LT(count(svg, "class=\"op "), static_cast<int>(sch.num_actions()));  // only what ran
  EXPECT_GE(count(svg, "class=\"op "), 1);

  // A narrow picture cuts the reason with an ellipsis and keeps the full text in a tooltip.
  SimResult wordy = sim;
  wordy.reason = sim.reason + " & then <" + std::string(300, 'x') + ">";
  SvgGanttOptions narrow;
  narrow.width = 500;
  svg = render_svg_gantt(inst, sch, wordy, narrow);
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_NE(svg.find("<title>Infeasible: " + xml_escape(wordy.reason) + "</title>"), std::string::npos);
  EXPECT_NE(svg.find("\u2026</text>"), std::string::npos);
  EXPECT_EQ(count(svg, std::string(300, 'x')), 1);  // only in the tooltip
}

TEST(GanttSvg, PendingTransfersOfADeadlockAreMarked) {
  // The reload must wait for memory that never frees: F0.1 holds it and B0.1 comes later.
  Instance inst = offloadable(test_support::uniform_instance(1, 2, 1.0, 1.0, 0.5, 0.0, GiB, GiB / 2, 1.2 * GiB));
  const Schedule sch = test_support::lists(inst, {{"F0.0@1", "F0.1", "R0.0", "B0.0", "W0.0", "B0.1", "W0.1"}});
  const SimResult sim = simulate(inst, sch);
  ASSERT_FALSE(sim.feasible);
  const bool pending =
      std::any_of(sim.transfers.begin(), sim.transfers.end(), [](const Transfer& t) { return !t.started; });
  ASSERT_TRUE(pending);
  const std::string svg = render_svg_gantt(inst, sch, sim);
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_EQ(count(svg, "class=\"xfer h2d pending\""), 1);
  EXPECT_NE(svg.find("never started"), std::string::npos);
}

TEST(GanttSvg, XPositionsGrowWithTime) {
  const Instance inst = test_support::uniform_instance(4, 8, 1.0, 1.5, 0.7, 0.1);
  const Schedule sch = one_f_one_b(inst);
  const SimResult sim = simulate(inst, sch);
  ASSERT_TRUE(sim.feasible) << sim.reason;
  std::vector<OpBox> boxes = op_boxes(render_svg_gantt(inst, sch, sim));
  ASSERT_EQ(boxes.size(), sch.num_actions());
  auto x_of = [&](const std::string& name) {
    for (const OpBox& b : boxes) {
      if (b.name == name) return b.x;
    }
    ADD_FAILURE() << name << " not drawn";
    return 0.0;
  };
  EXPECT_LT(x_of("F0.0"), x_of("F0.1"));
  EXPECT_LT(x_of("F0.0"), x_of("F1.0"));
  EXPECT_LT(x_of("F3.0"), x_of("B3.0"));
  EXPECT_LT(x_of("B3.0"), x_of("B0.0"));
  std::sort(boxes.begin(), boxes.end(), [](const OpBox& a, const OpBox& b) { return a.start < b.start; });
  for (std::size_t i = 1; i < boxes.size(); ++i) {
    if (boxes[i].start > boxes[i - 1].start + 1e-6) {
      EXPECT_GT(boxes[i].x, boxes[i - 1].x) << boxes[i - 1].name << " then " << boxes[i].name;
    } else {
      EXPECT_NEAR(boxes[i].x, boxes[i - 1].x, 0.11) << boxes[i - 1].name << " and " << boxes[i].name;
    }
  }
}

TEST(GanttSvg, LaterStagesOfADeviceAreLighter) {
  // V placement: device 0 holds stages 0 and 3, device 1 stages 1 and 2.
  Instance inst = test_support::uniform_instance(2, 1, 1.0, 1.0, 1.0);
  Instance v = inst;
  v.stages.push_back(inst.stages[1]);
  v.stages.push_back(inst.stages[0]);
  v.comm.assign(3, 0.0);
  ASSERT_EQ(v.placement(), Placement::kV);
  const Schedule sch = test_support::lists(v, {{"F0.0", "F3.0", "B3.0", "W3.0", "B0.0", "W0.0"},
                                          {"F1.0", "F2.0", "B2.0", "W2.0", "B1.0", "W1.0"}});
  const SimResult sim = simulate(v, sch);
  ASSERT_TRUE(sim.feasible) << sim.reason;
  const std::string svg = render_svg_gantt(v, sch, sim);
  auto fill_of = [&](const std::string& op) {
    const std::size_t title = svg.find("<title>" + op + " on ");
    const std::size_t rect = svg.rfind("class=\"op ", title);
    const std::size_t fill = svg.find("fill=\"", rect);
    return svg.substr(fill + 6, 7);
  };
  EXPECT_NE(fill_of("F0.0"), fill_of("F3.0"));
  EXPECT_EQ(fill_of("F0.0"), fill_of("F1.0"));  // each device's first stage: full colour
  EXPECT_EQ(fill_of("F3.0"), fill_of("F2.0"));
  EXPECT_NE(fill_of("F0.0"), fill_of("B0.0"));
  EXPECT_NE(svg.find("later stage"), std::string::npos);
  EXPECT_NE(svg.find(">stages 0, 3<"), std::string::npos);

  const std::string single = render_svg_gantt(inst, one_f_one_b(inst), simulate(inst, one_f_one_b(inst)));
  EXPECT_EQ(single.find("later stage"), std::string::npos);
}

TEST(GanttSvg, MicrobatchLabelsInsideWideBoxesAndAboveNarrowOnes) {
  // Forwards are 100x shorter than backwards: the B and W boxes carry their labels inside, the
  // F boxes are too narrow and get theirs above the row, with a tick down to the box.
  const Instance inst = test_support::uniform_instance(1, 3, 0.01, 1.0, 1.0);
  const Schedule sch =
      test_support::lists(inst, {{"F0.0", "B0.0", "W0.0", "F0.1", "B0.1", "W0.1", "F0.2", "B0.2", "W0.2"}});
  const SimResult sim = simulate(inst, sch);
  ASSERT_TRUE(sim.feasible) << sim.reason;
  const std::string svg = render_svg_gantt(inst, sch, sim);
  EXPECT_EQ(count(svg, "class=\"label\""), 6);
  EXPECT_EQ(count(svg, "class=\"label above\""), 3);
  EXPECT_EQ(count(svg, "class=\"tick-mb\""), 3);
  for (const char* mb : {"0", "1", "2"}) {
    EXPECT_EQ(count(svg, std::string("pointer-events=\"none\">") + mb + "</text>"), 3) << mb;  // F, B and W
  }
}

TEST(GanttSvg, WidthFollowsTheOpsUnlessGiven) {
  // 4 x 8 fits the default 1400 px; 16 x 64 gets wider, so that its ops have room for "63".
  const Instance small = test_support::uniform_instance(4, 8, 1.0, 1.0, 1.0);
  const Instance large = test_support::uniform_instance(16, 64, 1.0, 1.0, 1.0);
  auto width_of = [](const std::string& svg) {
    return std::strtod(svg.c_str() + svg.find("width=\"") + 7, nullptr);
  };
  const Schedule s1 = one_f_one_b(small), s2 = one_f_one_b(large);
  EXPECT_DOUBLE_EQ(width_of(render_svg_gantt(small, s1, simulate(small, s1))), 1400);
  const std::string wide = render_svg_gantt(large, s2, simulate(large, s2));
  EXPECT_GT(width_of(wide), 3000);
  EXPECT_LE(width_of(wide), 20000);
  EXPECT_EQ(count(wide, "class=\"label above\""), 0);  // equal durations: every box has room
  SvgGanttOptions given;
  given.width = 900;
  const std::string narrow = render_svg_gantt(large, s2, simulate(large, s2), given);
  EXPECT_DOUBLE_EQ(width_of(narrow), 900);
  // At 900 px no box has room: labels above the rows, on every Nth microbatch for one N.
  EXPECT_EQ(count(narrow, "class=\"label\""), 0);
  EXPECT_GT(count(narrow, "class=\"label above\""), 16);
}

TEST(GanttSvg, SummaryBandShowsEachGpusIdleShare) {
  // The last stage's forward is twice as long: it is the busiest GPU, the others idle more.
  Instance inst = test_support::uniform_instance(3, 4, 1.0, 1.0, 1.0);
  inst.stages[2].forward = 2.0;
  const Schedule sch = one_f_one_b(inst);
  const SimResult sim = simulate(inst, sch);
  ASSERT_TRUE(sim.feasible) << sim.reason;
  const std::string svg = render_svg_gantt(inst, sch, sim);
  EXPECT_EQ(count(svg, "class=\"idle-bar\""), 3 * 3);  // before, between, after per GPU
  EXPECT_EQ(count(svg, "class=\"bubble-line\""), 1);
  char all[32];
  std::snprintf(all, sizeof all, ">all: %.1f%%<", sim.bubble * 100);
  EXPECT_NE(svg.find(all), std::string::npos) << all;
  for (int d = 0; d < 3; ++d) {
    const double idle = sim.makespan - sim.busy[d];
    char row[32], band[32];
    std::snprintf(row, sizeof row, ">idle %.1f%%<", idle / sim.makespan * 100);
    std::snprintf(band, sizeof band, ">%.0f%%<", idle / sim.makespan * 100);
    EXPECT_NE(svg.find(row), std::string::npos) << row;  // in the row label
    EXPECT_NE(svg.find(band), std::string::npos) << band;
    char tip[64];
    std::snprintf(tip, sizeof tip, "GPU %d: busy %.2f ms, idle %.2f ms", d, sim.busy[d], idle);
    EXPECT_NE(svg.find(tip), std::string::npos) << tip;
  }
  EXPECT_GT(sim.makespan - sim.busy[0], sim.makespan - sim.busy[2]);
  // The idle parts add up: GPU 0 waits for nothing at the start, GPU 2 for the two stages before it.
  EXPECT_NE(svg.find("GPU 0: busy"), std::string::npos);
  EXPECT_NE(svg.find(": 0.00 ms before its first op"), std::string::npos);
  EXPECT_NE(svg.find(": 2.00 ms before its first op"), std::string::npos);

  // An infeasible run has no makespan: no band, no idle shares.
  const Instance tight = test_support::uniform_instance(2, 2, 1.0, 1.0, 1.0, 0.0, GiB, GiB / 2, 1.5 * GiB);
  const Schedule stuck = one_f_one_b(tight);
  const std::string none = render_svg_gantt(tight, stuck, simulate(tight, stuck));
  EXPECT_EQ(count(none, "idle"), 0);
}

TEST(GanttSvg, TickStepsAreRound) {
  EXPECT_DOUBLE_EQ(nice_tick_step(10, 10), 1);
  EXPECT_DOUBLE_EQ(nice_tick_step(11, 10), 2);
  EXPECT_DOUBLE_EQ(nice_tick_step(23.7, 10), 5);
  EXPECT_DOUBLE_EQ(nice_tick_step(0.37, 8), 0.05);
  EXPECT_DOUBLE_EQ(nice_tick_step(1234, 12), 200);
  EXPECT_DOUBLE_EQ(nice_tick_step(0, 10), 1);
  // The axis labels of a picture are multiples of one round step, starting at "0 ms".
  const Instance inst = test_support::uniform_instance(2, 3, 1.3, 1.1, 0.9);
  const Schedule sch = one_f_one_b(inst);
  const std::string svg = render_svg_gantt(inst, sch, simulate(inst, sch));
  EXPECT_NE(svg.find("class=\"tick\" font-size=\"10\" fill=\"#555555\" text-anchor=\"start\">0 ms<"),
            std::string::npos);
  EXPECT_GE(count(svg, "class=\"tick\""), 2 * 5);  // top and bottom axes
}

}  // namespace
}  // namespace optpipe
