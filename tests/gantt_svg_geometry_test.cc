// The SVG chart checked as a reader would look at it, from the SVG's own geometry: every <text>
// gets a box estimated from its font size and characters, and at 8 x 24, 16 x 64 and 32 x 128 no
// two texts overlap, every text lies inside the picture, every microbatch label sits inside the
// box it labels (or above its row, joined to it by a tick) and says that op's microbatch, and a
// reader finds microbatch numbers on every row. The schedules are tests/data/charts/ (made with
// `optpipe schedule` and `optpipe solve`, see its README); the instances are shipped ones.
// In a browser (suite GanttSvgInBrowser, skipped without Chromium): after the chart's script has
// zoomed, the labels it made pass the same checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "model/instance_io.h"
#include "model/schedule_io.h"
#include "model/simulator.h"
#include "tests/test_paths.h"
#include "tests/test_util.h"
#include "viz/gantt_svg.h"

namespace optpipe {
namespace {

// ---- A small reader of the SVG's elements ---------------------------------------------------------

struct Element {
  std::string name;
  std::map<std::string, std::string> attrs;
  std::string text;  // <text>: its characters (entities decoded, tooltips dropped); <rect>: its tooltip
  bool has(const std::string& a) const { return attrs.count(a) > 0; }
  double num(const std::string& a) const { return has(a) ? std::strtod(attrs.at(a).c_str(), nullptr) : 0.0; }
  bool is(const std::string& cls) const {  // has the class
    if (!has("class")) return false;
    const std::string c = " " + attrs.at("class") + " ";
    return c.find(" " + cls + " ") != std::string::npos;
  }
};

std::string decode(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '&') {
      out += s[i];
      continue;
    }
    const std::size_t semi = s.find(';', i);
    const std::string_view e = s.substr(i, semi - i + 1);
    out += e == "&lt;" ? "<" : e == "&gt;" ? ">" : e == "&quot;" ? "\"" : e == "&#39;" ? "'" : e == "&amp;" ? "&" : "?";
    i = semi;
  }
  return out;
}

// Markup without <title> elements and without tags: what a reader sees of it.
std::string visible(std::string_view markup) {
  std::string out;
  for (std::size_t i = 0; i < markup.size();) {
    if (markup.substr(i, 7) == "<title>") {
      i = markup.find("</title>", i) + 8;
    } else if (markup[i] == '<') {
      i = markup.find('>', i) + 1;
    } else {
      out += markup[i++];
    }
  }
  return decode(out);
}

std::map<std::string, std::string> attributes(std::string_view tag) {
  std::map<std::string, std::string> attrs;
  for (std::size_t i = tag.find(' '); i != std::string_view::npos && i < tag.size();) {
    const std::size_t eq = tag.find("=\"", i);
    if (eq == std::string_view::npos) break;
    const std::size_t start = tag.find_first_not_of(' ', i), end = tag.find('"', eq + 2);
    attrs[std::string(tag.substr(start, eq - start))] = decode(tag.substr(eq + 2, end - eq - 2));
    i = end + 1;
  }
  return attrs;
}

// The elements in document order, with the content of <text> and the tooltip of <rect>.
std::vector<Element> elements(const std::string& svg) {
  std::vector<Element> out;
  for (std::size_t i = svg.find('<'); i != std::string::npos; i = svg.find('<', i)) {
    if (svg.compare(i, 9, "<![CDATA[") == 0) {
      i = svg.find("]]>", i) + 3;
      continue;
    }
    const std::size_t end = svg.find('>', i);
    const std::string_view tag(svg.data() + i, end - i);
    i = end + 1;
    if (tag[1] == '/' || tag[1] == '?' || tag[1] == '!') continue;
    Element e;
    e.name = std::string(tag.substr(1, tag.find_first_of(" />", 1) - 1));
    e.attrs = attributes(tag);
    const bool closed = tag.back() == '/';
    if (e.name == "title" || e.name == "script" || (!closed && (e.name == "text" || e.name == "rect"))) {
      const std::size_t close = svg.find("</" + e.name + ">", i);
      const std::string_view inner(svg.data() + i, close - i);
      if (e.name == "text") e.text = visible(inner);
      if (e.name == "rect") e.text = decode(inner.substr(7, inner.find("</title>") - 7));
      i = close;
    }
    if (e.name != "title" && e.name != "script") out.push_back(e);
  }
  return out;
}

// ---- Text extents ---------------------------------------------------------------------------------------

struct Box {
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};

std::size_t glyphs(std::string_view s) {
  std::size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

// Width: 0.6 em a glyph (0.66 bold); height: 0.74 em above the baseline, 0.22 em below when a
// letter has a descender.
Box text_box(const Element& t) {
  const double font = t.num("font-size");
  const bool bold = t.has("font-weight") && t.attrs.at("font-weight") == "bold";
  const double w = static_cast<double>(glyphs(t.text)) * font * (bold ? 0.66 : 0.6);
  const std::string anchor = t.has("text-anchor") ? t.attrs.at("text-anchor") : "start";
  const double x = t.num("x"), y = t.num("y");
  const double x0 = anchor == "middle" ? x - w / 2 : (anchor == "end" ? x - w : x);
  const bool descender = t.text.find_first_of("gjpqy,()") != std::string::npos;
  return {x0, y - 0.74 * font, x0 + w, y + (descender ? 0.22 : 0.0) * font};
}

constexpr double kTolerance = 0.3;  // px; coordinates are written with one decimal

bool overlap(const Box& a, const Box& b) {
  return a.x0 < b.x1 - kTolerance && b.x0 < a.x1 - kTolerance && a.y0 < b.y1 - kTolerance && b.y0 < a.y1 - kTolerance;
}

bool inside(const Box& inner, double x, double y, double w, double h) {
  return inner.x0 >= x - kTolerance && inner.x1 <= x + w + kTolerance && inner.y0 >= y - kTolerance &&
         inner.y1 <= y + h + kTolerance;
}

std::string describe(const Element& t) {
  return "'" + t.text + "' at (" + t.attrs.at("x") + ", " + t.attrs.at("y") + ")";
}

// The microbatch of an op's or a transfer's tooltip: "F3.7 on GPU 1: ..." or "reload (H2D) of 3.7 on ...".
int tooltip_mb(const std::string& tooltip) {
  const std::size_t on = tooltip.find(" on GPU");
  const std::size_t dot = tooltip.rfind('.', on);
  return dot == std::string::npos ? -1 : std::atoi(tooltip.c_str() + dot + 1);
}

// ---- The checks ------------------------------------------------------------------------------------------

struct Report {
  std::vector<std::string> problems;
  int ops = 0, labelled = 0;
  int widest_gap = 0;       // most consecutive microbatches without a label on one row, for one op type
  int widest_row_gap = 0;   // the same for any op type: how far a reader looks for a number
};

struct Chart {
  std::vector<Element> all, texts, boxes, ticks;  // boxes: ops and transfers
  double width = 0, height = 0;
  Box column;  // the label column
  std::map<double, std::vector<const Element*>> rows;  // boxes by their top, then by x
};

Chart read_chart(const std::string& svg) {
  Chart c;
  c.all = elements(svg);
  for (const Element& e : c.all) {
    if (e.name == "svg") c.width = e.num("width"), c.height = e.num("height");
    if (e.name == "text") c.texts.push_back(e);
    if (e.name == "rect" && (e.is("op") || (e.is("xfer") && !e.is("pending")))) c.boxes.push_back(e);
    if (e.name == "line" && e.is("tick-mb")) c.ticks.push_back(e);
    if (e.name == "rect" && e.has("id") && e.attrs.at("id") == "gantt-column") {
      c.column = {e.num("x"), e.num("y"), e.num("x") + e.num("width"), e.num("y") + e.num("height")};
    }
  }
  for (const Element& b : c.boxes) c.rows[b.num("y")].push_back(&b);
  for (auto& [y, row] : c.rows) {
    std::sort(row.begin(), row.end(), [](const Element* a, const Element* b) { return a->num("x") < b->num("x"); });
  }
  return c;
}

// `picture`: also that every text is inside the picture and the label column (not after the
// script has taken the window: then the layers are moved and only labels are compared).
void check_bounds_and_overlaps(const Chart& c, Report& r, bool picture = true) {
  std::vector<Box> boxes;
  for (const Element& t : c.texts) boxes.push_back(text_box(t));
  std::map<std::pair<int, int>, std::vector<std::size_t>> cells;  // 40 px cells, for the pairs
  for (std::size_t i = 0; i < boxes.size(); ++i) {
    const Box& b = boxes[i];
    if (picture && !inside(b, 0, 0, c.width, c.height)) {
      r.problems.push_back("outside the picture: " + describe(c.texts[i]));
    }
    if (picture && b.y0 >= c.column.y0 && c.texts[i].num("x") < c.column.x1 && b.x1 > c.column.x1 + kTolerance) {
      r.problems.push_back("runs from the label column into the plot: " + describe(c.texts[i]));
    }
    std::set<std::size_t> seen;
    for (int cx = static_cast<int>(b.x0 / 40); cx <= static_cast<int>(b.x1 / 40); ++cx) {
      for (int cy = static_cast<int>(b.y0 / 40); cy <= static_cast<int>(b.y1 / 40); ++cy) {
        for (std::size_t j : cells[{cx, cy}]) {
          if (seen.insert(j).second && overlap(b, boxes[j])) {
            r.problems.push_back("overlap: " + describe(c.texts[j]) + " and " + describe(c.texts[i]));
          }
        }
        cells[{cx, cy}].push_back(i);
      }
    }
  }
}

// The op or transfer box that contains the point, or nullptr.
const Element* box_at(const Chart& c, double x, double y) {
  for (const auto& [top, row] : c.rows) {
    if (top > y || row.empty() || y > top + row.front()->num("height")) continue;
    auto it = std::upper_bound(row.begin(), row.end(), x, [](double v, const Element* b) { return v < b->num("x"); });
    if (it == row.begin()) continue;
    const Element* b = *(it - 1);
    if (x <= b->num("x") + b->num("width")) return b;
  }
  return nullptr;
}

// Labels inside boxes, and lane labels joined by their tick to the box below: the right number,
// in the right place. Fills `labelled` with the boxes that got a label.
void check_labels(const Chart& c, Report& r, std::set<const Element*>& labelled) {
  for (const Element& t : c.texts) {
    if (!t.is("label")) continue;
    const Box b = text_box(t);
    const Element* box = nullptr;
    if (!t.is("above")) {
      box = box_at(c, t.num("x"), (b.y0 + b.y1) / 2);
      if (!box || !inside(b, box->num("x"), box->num("y"), box->num("width"), box->num("height"))) {
        r.problems.push_back("label not inside a box: " + describe(t));
        continue;
      }
    } else {
      for (const Element& tick : c.ticks) {
        const double x = tick.num("x1");
        if (std::fabs(tick.num("y1") - (t.num("y") + 1.5)) > 0.2 || x < b.x0 - kTolerance || x > b.x1 + kTolerance)
          continue;
        box = box_at(c, x, tick.num("y2") + 0.5);
        if (box && (b.y1 > box->num("y") + kTolerance || b.y0 < box->num("y") - 13 - kTolerance)) {
          r.problems.push_back("label above not in the lane over its box: " + describe(t));
        }
        break;
      }
      if (!box) {
        r.problems.push_back("label above with no tick to a box: " + describe(t));
        continue;
      }
    }
    if (std::to_string(tooltip_mb(box->text)) != t.text) {
      r.problems.push_back("label " + describe(t) + " on the box of " + box->text.substr(0, box->text.find(':')));
    }
    labelled.insert(box);
  }
}

// How far a reader has to look for a microbatch number: the widest run of microbatches without a
// label, per row and op type.
int widest_gap(const std::map<std::pair<double, std::string>, std::set<int>>& all,
               std::map<std::pair<double, std::string>, std::set<int>>& with_label) {
  int widest = 0;
  for (const auto& [key, mbs] : all) {
    int gap = 0;
    for (int mb : mbs) {
      gap = with_label[key].count(mb) ? 0 : gap + 1;
      widest = std::max(widest, gap);
    }
  }
  return widest;
}

void check_coverage(const Chart& c, const std::set<const Element*>& labelled, Report& r) {
  std::map<std::pair<double, std::string>, std::set<int>> all, with_label, row_all, row_with_label;
  for (const Element& b : c.boxes) {
    if (!b.is("op")) continue;
    ++r.ops;
    const int mb = tooltip_mb(b.text);
    all[{b.num("y"), b.attrs.at("class")}].insert(mb);
    row_all[{b.num("y"), ""}].insert(mb);
    if (!labelled.count(&b)) continue;
    ++r.labelled;
    with_label[{b.num("y"), b.attrs.at("class")}].insert(mb);
    row_with_label[{b.num("y"), ""}].insert(mb);
  }
  r.widest_gap = widest_gap(all, with_label);
  r.widest_row_gap = widest_gap(row_all, row_with_label);
}

Report check_chart(const std::string& svg) {
  const Chart c = read_chart(svg);
  Report r;
  if (c.width <= 0 || c.texts.empty()) r.problems.push_back("no picture");
  check_bounds_and_overlaps(c, r);
  std::set<const Element*> labelled;
  check_labels(c, r, labelled);
  check_coverage(c, labelled, r);
  return r;
}

// The labels of the plot layer of a chart whose script has run (a browser's DOM): inside their
// boxes or above them, right numbers, apart.
Report check_script_labels(const std::string& dom) {
  Chart c = read_chart(dom);
  std::vector<Element> labels;
  for (const Element& t : c.texts) {
    if (t.is("label")) labels.push_back(t);
  }
  c.texts = labels;
  Report r;
  check_bounds_and_overlaps(c, r, false);
  std::set<const Element*> labelled;
  check_labels(c, r, labelled);
  r.labelled = static_cast<int>(labelled.size());
  return r;
}

std::string first_problems(const Report& r) {
  std::string s = std::to_string(r.problems.size()) + " problems";
  for (std::size_t i = 0; i < r.problems.size() && i < 12; ++i) s += "\n  " + r.problems[i];
  return s;
}

// ---- The charts --------------------------------------------------------------------------------------

std::string chart(const std::string& instance, const std::string& schedule, int width = 0) {
  const Instance inst = load_instance(std::string(OPTPIPE_SOURCE_DIR) + "/" + instance);
  const Schedule sch = load_schedule(std::string(OPTPIPE_SOURCE_DIR) + "/tests/data/charts/" + schedule);
  const SimResult sim = simulate(inst, sch);
  EXPECT_TRUE(sim.feasible) << sim.reason;
  SvgGanttOptions o;
  o.width = width;
  return render_svg_gantt(inst, sch, sim, o);
}

TEST(GanttSvgGeometry, CheckerFindsOverlapsStrayLabelsAndWrongNumbers) {
  const std::string good = chart("instances/gpt-8x24-tight.json", "gpt-8x24-tight.schedule.json");
  ASSERT_EQ(check_chart(good).problems.size(), 0u) << first_problems(check_chart(good));
  auto broken = [&](const std::string& from, const std::string& to) {
    std::string svg = good;
    const std::size_t at = svg.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return check_chart(svg.replace(at, from.size(), to)).problems;
  };
  // A label moved 40 px right leaves its box; one renamed says the wrong microbatch; a header line
  // moved onto the title overlaps it; a tick label moved past the right edge leaves the picture.
  const std::size_t label = good.find("class=\"label\"");
  const std::size_t x = good.rfind("<text x=\"", label) + 9;
  const std::string x_attr = good.substr(x, good.find('"', x) - x);
  const std::string label_tag = good.substr(x - 9, good.find("</text>", x) - x + 9);
  EXPECT_FALSE(broken(label_tag, "<text x=\"" + std::to_string(std::stod(x_attr) + 40) +
                                     label_tag.substr(9 + x_attr.size())).empty());
  const std::size_t end = label_tag.rfind('>');
  EXPECT_FALSE(broken(label_tag, label_tag.substr(0, end + 1) + "99").empty());
  const std::size_t gpu0 = good.rfind("<text ", good.find(">GPU 0</text>"));
  const std::string gpu0_tag = good.substr(gpu0, good.find("</text>", gpu0) + 7 - gpu0);
  EXPECT_FALSE(broken(gpu0_tag, gpu0_tag + "\n" + gpu0_tag).empty());  // drawn twice: overlaps itself
  EXPECT_FALSE(broken(">700</text>", ">" + std::string(80, '7') + "</text>").empty());  // past the right edge
}

TEST(GanttSvgGeometry, Gpt8x24ChartsAreReadable) {
  for (const char* schedule : {"gpt-8x24-tight.schedule.json", "gpt-8x24-tight.solved.json"}) {
    const Report r = check_chart(chart("instances/gpt-8x24-tight.json", schedule));
    EXPECT_TRUE(r.problems.empty()) << schedule << ": " << first_problems(r);
    EXPECT_EQ(r.ops, 8 * 24 * 3);
    EXPECT_GE(r.labelled, r.ops * 95 / 100) << schedule;
    EXPECT_LE(r.widest_gap, 1) << schedule;
  }
}

TEST(GanttSvgGeometry, Llama16x64ChartIsReadable) {
  const Report r = check_chart(chart("instances/generated/scale-llama2-7b-16x64-2act.json",
                                     "scale-llama2-7b-16x64-2act.schedule.json"));
  EXPECT_TRUE(r.problems.empty()) << first_problems(r);
  EXPECT_EQ(r.ops, 16 * 64 * 3);
  EXPECT_GE(r.labelled, r.ops * 95 / 100);
  EXPECT_LE(r.widest_gap, 1);
}

TEST(GanttSvgGeometry, Llama32x128ChartIsReadable) {
  const Report r = check_chart(chart("instances/generated/scale-llama2-7b-32x128-2act.json",
                                     "scale-llama2-7b-32x128-2act.schedule.json"));
  EXPECT_TRUE(r.problems.empty()) << first_problems(r);
  EXPECT_EQ(r.ops, 32 * 128 * 3);
  EXPECT_GE(r.labelled, r.ops * 95 / 100);
  EXPECT_LE(r.widest_gap, 1);
}

TEST(GanttSvgGeometry, NarrowChartsLabelEveryNthMicrobatch) {
  // At 1400 px (as before the width followed the ops) most boxes have no room: labels above the
  // rows for every Nth microbatch, still apart, still findable.
  for (const auto& [instance, schedule] :
       {std::pair{"instances/generated/scale-llama2-7b-16x64-2act.json", "scale-llama2-7b-16x64-2act.schedule.json"},
        std::pair{"instances/generated/scale-llama2-7b-32x128-2act.json", "scale-llama2-7b-32x128-2act.schedule.json"}}) {
    const Report r = check_chart(chart(instance, schedule, 1400));
    EXPECT_TRUE(r.problems.empty()) << schedule << ": " << first_problems(r);
    EXPECT_LT(r.labelled, r.ops / 2) << schedule;
    EXPECT_GT(r.labelled, 0) << schedule;
    EXPECT_LE(r.widest_row_gap, 20) << schedule;
    std::printf("%s at 1400 px: %d of %d ops labelled, widest gap %d (one type), %d (any type)\n", schedule,
                r.labelled, r.ops, r.widest_gap, r.widest_row_gap);
  }
}

// ---- In a browser ----------------------------------------------------------------------------------------

std::string find_chromium() {
  if (const char* env = std::getenv("CHROMIUM")) return env;
  const auto r = test_support::run_shell("(command -v chromium || command -v chromium-browser || command -v google-chrome)");
  return r.status == 0 ? r.output.substr(0, r.output.find('\n')) : std::string();
}

// The chart's DOM after its script ran in headless Chromium, the URL fragment giving the view.
std::string browser_dom(const std::string& chromium, const std::string& svg, const std::string& fragment) {
  const std::string path = test_support::temp_file("chart", "chart.svg");
  std::FILE* f = std::fopen(path.c_str(), "w");
  std::fwrite(svg.data(), 1, svg.size(), f);
  std::fclose(f);
  const auto r = test_support::run_shell(
      "timeout 180 " + test_support::shell_quote(chromium) +
      " --headless --no-sandbox --disable-gpu --window-size=1600,1000 --user-data-dir=" +
      test_support::shell_quote(test_support::temp_file("chart", "profile")) + " --dump-dom " +
      test_support::shell_quote("file://" + path + "#" + fragment) + " 2>/dev/null");
  EXPECT_EQ(r.status, 0) << r.output.substr(0, 2000);
  return r.output;
}

double first_op_width(const std::string& svg) {
  const std::size_t op = svg.find("class=\"op ");
  const std::size_t w = svg.rfind(" width=\"", op);
  return std::strtod(svg.c_str() + w + 8, nullptr);
}

TEST(GanttSvgInBrowser, ZoomedChartsAreLabelledByTheSameRule) {
  const std::string chromium = find_chromium();
  if (chromium.empty()) GTEST_SKIP() << "chromium is not installed (apt-get install chromium; CI does not install it)";
  // 16 x 64 zoomed in 3 times, scrolled into the middle: the script stretched the ops and
  // labelled those near the view.
  const std::string svg = chart("instances/generated/scale-llama2-7b-16x64-2act.json",
                                "scale-llama2-7b-16x64-2act.schedule.json");
  const std::string zoomed = browser_dom(chromium, svg, "zoom=3&t=1500&gpu=4");
  ASSERT_NE(zoomed.find("data-view=\"ready\""), std::string::npos) << zoomed.substr(0, 500);
  EXPECT_NEAR(first_op_width(zoomed), 3 * first_op_width(svg), 0.01 * first_op_width(svg));
  Report r = check_script_labels(zoomed);
  EXPECT_TRUE(r.problems.empty()) << first_problems(r);
  EXPECT_GT(r.labelled, 300);
  // 32 x 128 fitted to 1600 px: no box has room; landmarks above the rows.
  const std::string fit = browser_dom(chromium,
                                      chart("instances/generated/scale-llama2-7b-32x128-2act.json",
                                            "scale-llama2-7b-32x128-2act.schedule.json"),
                                      "zoom=fit");
  ASSERT_NE(fit.find("data-view=\"ready\""), std::string::npos) << fit.substr(0, 500);
  r = check_script_labels(fit);
  EXPECT_TRUE(r.problems.empty()) << first_problems(r);
  EXPECT_GE(r.labelled, 32 * 3);  // a few on every row
}

}  // namespace
}  // namespace optpipe
