#include "viz/frontier_svg.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "model/bytes.h"
#include "viz/gantt_svg.h"
#include "viz/svg_markup.h"

namespace optpipe {
namespace {

constexpr double kGiB = 1073741824.0;
constexpr double kLeft = 84, kRight = 36, kTop = 72, kBottom = 132;
constexpr const char* kMakespanColour = "#4477AA";
constexpr const char* kBoundColour = "#777777";
constexpr const char* kFloorColour = "#CC3311";
constexpr const char* kGrid = "#E4E4E4";
// Paul Tol's bright palette, without the blue of the makespan and the red of the floor.
constexpr const char* kMarkColours[] = {"#228833", "#CCBB44", "#AA3377", "#EE7733", "#66CCEE", "#009988"};

using svg::escape;
using svg::fixed;
using svg::px;

// Decimals that show a tick step exactly (0 for 1, 2, 5, 10, ...; 1 for 0.5; ...).
int decimals_for(double step) {
  int d = 0;
  while (d < 6 && std::fabs(step * std::pow(10.0, d) - std::round(step * std::pow(10.0, d))) > 1e-9) ++d;
  return d;
}

bool finite_positive(double v) { return std::isfinite(v) && v > 0; }

// One axis: a value range (with a margin) and the pixels it maps to.
struct Axis {
  double lo = 0, hi = 1, from = 0, to = 1;
  double at(double v) const { return from + (v - lo) / (hi - lo) * (to - from); }
  void fit(std::vector<double> values, double margin) {
    if (values.empty()) values = {0.0, 1.0};
    lo = *std::min_element(values.begin(), values.end());
    hi = *std::max_element(values.begin(), values.end());
    const double pad = hi > lo ? margin * (hi - lo) : std::max(1.0, 0.05 * std::fabs(hi));
    lo -= pad;
    hi += pad;
  }
};

struct Plot {
  Axis x, y;  // x in GiB, y in ms
  double left = 0, right = 0, top = 0, bottom = 0;
};

Plot layout(const FrontierChart& c, const FrontierSvgOptions& o) {
  Plot p;
  p.left = kLeft;
  p.right = o.width - kRight;
  p.top = kTop;
  p.bottom = o.height - kBottom;
  std::vector<double> xs, ys;
  if (c.floor > 0) xs.push_back(c.floor / kGiB);
  for (const auto& q : c.points) {
    xs.push_back(q.limit / kGiB);
    if (std::isfinite(q.makespan)) ys.push_back(q.makespan);
    if (finite_positive(q.bound)) ys.push_back(q.bound);
  }
  for (const auto& m : c.marks) xs.push_back(m.peak / kGiB), ys.push_back(m.makespan);
  p.x.fit(xs, 0.05);
  p.y.fit(ys, 0.08);
  p.x.from = p.left, p.x.to = p.right;
  p.y.from = p.bottom, p.y.to = p.top;
  return p;
}

void line(std::string& out, double x1, double y1, double x2, double y2, const std::string& attrs) {
  out += "<line x1=\"" + px(x1) + "\" y1=\"" + px(y1) + "\" x2=\"" + px(x2) + "\" y2=\"" + px(y2) + "\" " + attrs +
         "/>\n";
}

void text(std::string& out, double x, double y, const std::string& content, const std::string& attrs) {
  out += "<text x=\"" + px(x) + "\" y=\"" + px(y) + "\" " + attrs + ">" + escape(content) + "</text>\n";
}

void axes(std::string& out, const Plot& p) {
  const double xs = nice_tick_step(p.x.hi - p.x.lo, 10), ys = nice_tick_step(p.y.hi - p.y.lo, 10);
  for (double v = std::ceil(p.x.lo / xs) * xs; v <= p.x.hi + 1e-9; v += xs) {
    const double x = p.x.at(v);
    line(out, x, p.top, x, p.bottom, "stroke=\"" + std::string(kGrid) + "\"");
    text(out, x, p.bottom + 16, fixed(v, decimals_for(xs)), "font-size=\"11\" text-anchor=\"middle\"");
  }
  for (double v = std::ceil(p.y.lo / ys) * ys; v <= p.y.hi + 1e-9; v += ys) {
    const double y = p.y.at(v);
    line(out, p.left, y, p.right, y, "stroke=\"" + std::string(kGrid) + "\"");
    text(out, p.left - 6, y + 4, fixed(v, decimals_for(ys)), "font-size=\"11\" text-anchor=\"end\"");
  }
  out += "<rect x=\"" + px(p.left) + "\" y=\"" + px(p.top) + "\" width=\"" + px(p.right - p.left) + "\" height=\"" +
         px(p.bottom - p.top) + "\" fill=\"none\" stroke=\"#333333\"/>\n";
  text(out, (p.left + p.right) / 2, p.bottom + 36, "memory limit per GPU (GiB)",
       "font-size=\"13\" text-anchor=\"middle\" class=\"axis-title\"");
  const double cy = (p.top + p.bottom) / 2;
  out += "<text x=\"22\" y=\"" + px(cy) + "\" font-size=\"13\" text-anchor=\"middle\" class=\"axis-title\" " +
         "transform=\"rotate(-90 22 " + px(cy) + ")\">makespan (ms)</text>\n";
}

void floor_region(std::string& out, const FrontierChart& c, const Plot& p) {
  if (!(c.floor > 0)) return;
  const double x = std::clamp(p.x.at(c.floor / kGiB), p.left, p.right);
  out += "<rect class=\"below-floor\" x=\"" + px(p.left) + "\" y=\"" + px(p.top) + "\" width=\"" + px(x - p.left) +
         "\" height=\"" + px(p.bottom - p.top) + "\" fill=\"#EEEEEE\"/>\n";
  line(out, x, p.top, x, p.bottom,
       "class=\"floor\" stroke=\"" + std::string(kFloorColour) + "\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"");
  text(out, x + 5, p.top + 14, c.floor_label, "font-size=\"11\" fill=\"" + std::string(kFloorColour) + "\"");
}

std::string tooltip(const FrontierChartPoint& q) {
  std::string t = format_bytes(q.limit) + ": makespan " + fixed(q.makespan, 3) + " ms";
  if (finite_positive(q.bound)) t += ", bound " + fixed(q.bound, 3) + " ms";
  if (q.carried) t += " (a lower limit's schedule, run with memory capped there)";
  return t;
}

// The bound at a limit between two grid limits is the larger limit's (the optimum never rises
// with memory): from each marker the line drops or rises at once to the next one's value and
// runs flat to it.
void bound_line(std::string& out, const FrontierChart& c, const Plot& p) {
  std::string path;
  for (const auto& q : c.points) {
    if (!finite_positive(q.bound)) continue;
    const double x = p.x.at(q.limit / kGiB), y = p.y.at(q.bound);
    path += path.empty() ? "M" + px(x) + " " + px(y) : " V" + px(y) + " H" + px(x);
    out += "<rect class=\"bound\" x=\"" + px(x - 3) + "\" y=\"" + px(y - 3) + "\" width=\"6\" height=\"6\" fill=\"" +
           std::string(kBoundColour) + "\"><title>" + escape(format_bytes(q.limit) + ": proven lower bound " +
                                                            fixed(q.bound, 3) + " ms") + "</title></rect>\n";
  }
  if (!path.empty()) {
    out += "<path class=\"bound-line\" d=\"" + path + "\" fill=\"none\" stroke=\"" + kBoundColour +
           "\" stroke-width=\"1.5\" stroke-dasharray=\"5 4\"/>\n";
  }
}

// The best makespan known at each limit: the grid's schedules and the classic ones inside the
// grid's range, each from its limit on (a schedule that fits runs with more memory too).
std::vector<std::pair<double, double>> best_known(const FrontierChart& c) {
  std::vector<std::pair<double, double>> known;  // (limit in bytes, makespan)
  for (const auto& q : c.points) {
    if (std::isfinite(q.makespan)) known.emplace_back(q.limit, q.makespan);
  }
  if (known.empty()) return known;
  const double lo = c.points.front().limit, hi = c.points.back().limit;
  for (const auto& m : c.marks) {
    if (m.peak >= lo && m.peak <= hi) known.emplace_back(m.peak, m.makespan);
  }
  std::sort(known.begin(), known.end());
  std::vector<std::pair<double, double>> steps;
  for (const auto& k : known) {
    if (steps.empty() || k.second < steps.back().second) steps.push_back(k);
  }
  if (steps.back().first < hi) steps.emplace_back(hi, steps.back().second);
  return steps;
}

void makespan_steps(std::string& out, const FrontierChart& c, const Plot& p) {
  std::string path;
  for (const auto& [limit, makespan] : best_known(c)) {
    const double x = p.x.at(limit / kGiB), y = p.y.at(makespan);
    path += path.empty() ? "M" + px(x) + " " + px(y) : " H" + px(x) + " V" + px(y);
  }
  if (!path.empty()) {
    out += "<path class=\"makespan-line\" d=\"" + path + "\" fill=\"none\" stroke=\"" + kMakespanColour +
           "\" stroke-width=\"2\"/>\n";
  }
  for (const auto& q : c.points) {
    if (!std::isfinite(q.makespan)) continue;
    out += "<circle class=\"makespan\" cx=\"" + px(p.x.at(q.limit / kGiB)) + "\" cy=\"" + px(p.y.at(q.makespan)) +
           "\" r=\"4.5\" fill=\"" + (q.carried ? std::string("#FFFFFF") : std::string(kMakespanColour)) +
           "\" stroke=\"" + kMakespanColour + "\" stroke-width=\"1.5\"><title>" + escape(tooltip(q)) +
           "</title></circle>\n";
  }
}

std::string diamond(double x, double y, double r) {
  return px(x) + "," + px(y - r) + " " + px(x + r) + "," + px(y) + " " + px(x) + "," + px(y + r) + " " + px(x - r) +
         "," + px(y);
}

void classic_marks(std::string& out, const FrontierChart& c, const Plot& p) {
  for (std::size_t i = 0; i < c.marks.size(); ++i) {
    const auto& m = c.marks[i];
    const std::string colour = kMarkColours[i % std::size(kMarkColours)];
    const double x = p.x.at(m.peak / kGiB), y = p.y.at(m.makespan);
    out += "<polygon class=\"classic\" points=\"" + diamond(x, y, 7) + "\" fill=\"" + colour +
           "\" stroke=\"#333333\"><title>" +
           escape(m.label + ": peak " + format_bytes(m.peak) + ", makespan " + fixed(m.makespan, 3) + " ms") +
           "</title></polygon>\n";
    // Labels alternate above and below, so that schedules with close points stay readable.
    text(out, x + 9, y + (i % 2 == 0 ? -6 : 14), m.label, "font-size=\"12\" fill=\"#333333\"");
  }
}

void legend(std::string& out, const FrontierChart& c, const Plot& p) {
  double x = p.left, y = p.bottom + 62;
  auto item = [&](const std::string& swatch, const std::string& label) {
    out += swatch;
    text(out, x + 30, y + 4, label, "font-size=\"12\"");
    x += 30 + 7.2 * static_cast<double>(label.size()) + 22;
    if (x > p.right - 160) x = p.left, y += 20;
  };
  item("<line x1=\"" + px(x) + "\" y1=\"" + px(y) + "\" x2=\"" + px(x + 24) + "\" y2=\"" + px(y) + "\" stroke=\"" +
           kMakespanColour + "\" stroke-width=\"2\"/>\n",
       "best makespan known (a schedule runs with more memory too)");
  item("<line x1=\"" + px(x) + "\" y1=\"" + px(y) + "\" x2=\"" + px(x + 24) + "\" y2=\"" + px(y) + "\" stroke=\"" +
           kBoundColour + "\" stroke-width=\"1.5\" stroke-dasharray=\"5 4\"/>\n",
       "proven lower bound at each limit (between limits: the next one's)");
  if (c.floor > 0) {
    item("<rect x=\"" + px(x) + "\" y=\"" + px(y - 6) + "\" width=\"24\" height=\"12\" fill=\"#EEEEEE\" stroke=\"" +
             kFloorColour + "\" stroke-dasharray=\"3 2\"/>\n",
         "no schedule fits (below the memory floor)");
  }
  for (std::size_t i = 0; i < c.marks.size(); ++i) {
    const auto& m = c.marks[i];
    item("<polygon points=\"" + diamond(x + 12, y, 6) + "\" fill=\"" + kMarkColours[i % std::size(kMarkColours)] +
             "\" stroke=\"#333333\"/>\n",
         m.label + " (fits from " + format_bytes(m.peak) + ")");
  }
}

}  // namespace

std::string render_frontier_svg(const FrontierChart& chart, const FrontierSvgOptions& options) {
  const Plot p = layout(chart, options);
  std::string out;
  out += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + std::to_string(options.width) +
         "\" height=\"" + std::to_string(options.height) + "\" viewBox=\"0 0 " + std::to_string(options.width) + " " +
         std::to_string(options.height) + "\" font-family=\"sans-serif\">\n";
  out += "<rect width=\"100%\" height=\"100%\" fill=\"#FFFFFF\"/>\n";
  text(out, kLeft, 28, chart.title, "font-size=\"17\" font-weight=\"bold\"");
  text(out, kLeft, 48, chart.subtitle, "font-size=\"12\" fill=\"#666666\"");
  floor_region(out, chart, p);
  axes(out, p);
  bound_line(out, chart, p);
  makespan_steps(out, chart, p);
  classic_marks(out, chart, p);
  legend(out, chart, p);
  out += "</svg>\n";
  return out;
}

}  // namespace optpipe
