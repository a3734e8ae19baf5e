#include "viz/gantt_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string_view>
#include <vector>

#include "model/action.h"
#include "model/bytes.h"

namespace optpipe {
namespace {

// ---------------------------------------------------------------------------------------------
// Text and numbers

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  std::string s = buf;
  if (s[0] == '-' && s.find_first_not_of("-0.") == std::string::npos) s.erase(0, 1);  // no "-0.0"
  return s;
}

std::string px(double v) { return fixed(v, 1); }

std::string percent(double fraction) {
  const double p = fraction * 100.0;
  return fixed(p, std::fabs(p - std::round(p)) < 1e-9 ? 0 : 1) + "%";
}

std::string escape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 16);
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        // XML 1.0 forbids most control characters, even escaped.
        out += (static_cast<unsigned char>(c) < 0x20) ? ' ' : c;
    }
  }
  return out;
}

// Estimated width of `chars` characters of sans-serif text (generous, so labels never spill).
double text_width(std::size_t chars, double font_size) {
  return static_cast<double>(chars) * font_size * 0.58;
}

// Number of UTF-8 code points (for width estimates).
std::size_t glyphs(std::string_view s) {
  std::size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

// `s` cut to at most `max_glyphs` code points, the last one an ellipsis, when it is longer.
std::string ellipsize(std::string_view s, std::size_t max_glyphs) {
  if (glyphs(s) <= max_glyphs) return std::string(s);
  std::size_t keep = max_glyphs > 0 ? max_glyphs - 1 : 0, i = 0;
  for (std::size_t n = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 && n++ == keep) break;
  }
  return std::string(s.substr(0, i)) + "\u2026";
}

// ---------------------------------------------------------------------------------------------
// Colours (Paul Tol's colour-blind-safe palettes)

struct Rgb {
  int r = 0, g = 0, b = 0;
};

constexpr Rgb kForward{0x44, 0x77, 0xAA};   // blue
constexpr Rgb kBackward{0xEE, 0x77, 0x33};  // orange
constexpr Rgb kWeight{0x22, 0x88, 0x33};    // green
constexpr Rgb kOffload{0x88, 0x55, 0xBB};   // purple
constexpr Rgb kReload{0x00, 0x99, 0x88};    // teal
constexpr const char* kLimitColour = "#CC3311";
constexpr const char* kMemoryFill = "#C9CFDA";
constexpr const char* kMemoryStroke = "#5B6677";
constexpr const char* kGrid = "#E4E4E4";
constexpr const char* kMuted = "#666666";

std::string hex(Rgb c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02X%02X%02X", c.r, c.g, c.b);
  return buf;
}

// `c` moved a fraction `f` of the way to white.
Rgb lighten(Rgb c, double f) {
  auto mix = [f](int v) { return static_cast<int>(std::lround(v + (255 - v) * f)); };
  return {mix(c.r), mix(c.g), mix(c.b)};
}

const char* text_colour_on(Rgb c) {
  return 0.299 * c.r + 0.587 * c.g + 0.114 * c.b < 150 ? "#FFFFFF" : "#1A1A1A";
}

Rgb type_colour(OpType t) {
  switch (t) {
    case OpType::F: return kForward;
    case OpType::B: return kBackward;
    default: return kWeight;
  }
}

// Shade of the k-th of n stages of a device: the first at full colour, the last 55% lighter.
Rgb stage_shade(Rgb c, int k, int n) { return n <= 1 ? c : lighten(c, 0.55 * k / (n - 1)); }

// ---------------------------------------------------------------------------------------------
// SVG elements

void rect(std::string& out, double x, double y, double w, double h, std::string_view attrs,
          std::string_view tooltip = {}) {
  out += "<rect x=\"" + px(x) + "\" y=\"" + px(y) + "\" width=\"" + px(std::max(w, 0.0)) + "\" height=\"" +
         px(std::max(h, 0.0)) + "\" ";
  out += attrs;
  if (tooltip.empty()) {
    out += "/>\n";
  } else {
    out += "><title>" + escape(tooltip) + "</title></rect>\n";
  }
}

void line(std::string& out, double x1, double y1, double x2, double y2, std::string_view attrs,
          std::string_view tooltip = {}) {
  out += "<line x1=\"" + px(x1) + "\" y1=\"" + px(y1) + "\" x2=\"" + px(x2) + "\" y2=\"" + px(y2) + "\" ";
  out += attrs;
  if (tooltip.empty()) {
    out += "/>\n";
  } else {
    out += "><title>" + escape(tooltip) + "</title></line>\n";
  }
}

// `content` is raw markup (escaped text or tspans).
void text(std::string& out, double x, double y, std::string_view content, std::string_view attrs) {
  out += "<text x=\"" + px(x) + "\" y=\"" + px(y) + "\" ";
  out += attrs;
  out += ">";
  out += content;
  out += "</text>\n";
}

// ---------------------------------------------------------------------------------------------
// Layout

constexpr double kMargin = 14;       // left/right/top padding of the picture
constexpr double kLabelColumn = 84;  // device and lane labels left of the plot
constexpr double kOpRow = 26;
constexpr double kLane = 12;
constexpr double kLaneGap = 2;
constexpr double kMemCaption = 13;
constexpr double kMemChart = 40;
constexpr double kDeviceGap = 14;
constexpr double kAxisLabels = 16;    // tick labels band
constexpr double kMakespanBand = 14;  // makespan label band above the tick labels

struct TimeAxis {
  double left = 0, right = 0, end = 1, step = 1;
  int tick_decimals = 0, time_decimals = 2;
  double x(double t) const { return left + (right - left) * t / end; }
  std::string time(double t) const { return fixed(t, time_decimals); }
};

struct DeviceRows {
  double top = 0, op = 0, d2h = -1, h2d = -1, caption = -1, chart = -1, bottom = 0;
};

struct Context {
  const Instance& inst;
  const Schedule& sch;
  const SimResult& sim;
  const SvgGanttOptions& opt;
  std::vector<std::vector<int>> stages;  // stages_by_device()
  bool multi_stage = false;
  TimeAxis axis;
  std::vector<DeviceRows> rows;
  double width = 0, height = 0;
  double plot_top = 0, plot_bottom = 0;  // grid lines span
};

std::string gpu(int d) { return "GPU " + std::to_string(d); }

bool has_transfer(const SimResult& sim, int d, Transfer::Kind kind) {
  return std::any_of(sim.transfers.begin(), sim.transfers.end(),
                     [&](const Transfer& t) { return t.device == d && t.kind == kind; });
}

double axis_end(const SimResult& sim) {
  double end = sim.makespan;
  for (const Transfer& t : sim.transfers) end = std::max(end, t.started ? t.end : t.request);
  for (const auto& curve : sim.memory) {
    if (!curve.empty()) end = std::max(end, curve.back().time);
  }
  return end > 0 && std::isfinite(end) ? end : 1.0;
}

TimeAxis make_axis(double left, double right, double end) {
  TimeAxis a;
  a.left = left;
  a.right = right;
  a.end = end;
  a.step = nice_tick_step(end, std::max(2, static_cast<int>((right - left) / 90)));
  a.tick_decimals = std::max(0, -static_cast<int>(std::floor(std::log10(a.step) + 1e-9)));
  a.time_decimals = std::max(2, a.tick_decimals + 1);
  return a;
}

double layout_device(Context& c, int d, double y) {
  DeviceRows r;
  r.top = y;
  r.op = y;
  y += kOpRow;
  if (c.opt.transfers && has_transfer(c.sim, d, Transfer::Kind::kOffload)) {
    r.d2h = y + kLaneGap;
    y = r.d2h + kLane;
  }
  if (c.opt.transfers && has_transfer(c.sim, d, Transfer::Kind::kReload)) {
    r.h2d = y + kLaneGap;
    y = r.h2d + kLane;
  }
  if (c.opt.memory) {
    r.caption = y + 3;
    r.chart = r.caption + kMemCaption;
    y = r.chart + kMemChart;
  }
  r.bottom = y;
  c.rows.push_back(r);
  return y + kDeviceGap;
}

// ---------------------------------------------------------------------------------------------
// Header: title, summary, infeasibility reason

// Makespan and bubble; an infeasible run has neither, only the time it stopped at.
std::string status_line(const Context& c) {
  if (!c.sim.feasible) {
    return "stopped at " + fixed(c.sim.makespan, 2) + " ms (no makespan, no bubble) \u00b7 ";
  }
  return "makespan " + fixed(c.sim.makespan, 2) + " ms \u00b7 bubble " + fixed(c.sim.bubble * 100, 1) +
         "% \u00b7 ";
}

std::string feasibility_markup(const Context& c) {
  return c.sim.feasible
             ? std::string("<tspan fill=\"#228833\">feasible</tspan>")
             : std::string("<tspan fill=\"") + kLimitColour + "\" font-weight=\"bold\">INFEASIBLE</tspan>";
}

std::string info_line(const Context& c) {
  const Instance& i = c.inst;
  std::string s = std::to_string(i.num_devices()) + (i.num_devices() == 1 ? " GPU" : " GPUs") + " \u00b7 " +
                  std::to_string(i.num_stages()) + (i.num_stages() == 1 ? " stage" : " stages") +
                  ", placement " + to_string(i.placement()) + " \u00b7 " + std::to_string(i.microbatches) +
                  " microbatches \u00b7 " + (i.split_backward ? "split backward (B + W)" : "fused backward");
  if (!c.sch.solver.empty()) s += " \u00b7 " + c.sch.solver;
  // What the solver proved, from the schedule file's informational fields.
  if (c.sch.status == "optimal") {
    s += " \u00b7 proven optimal";
  } else if (c.sch.bound && c.sch.gap) {
    s += " \u00b7 lower bound " + fixed(*c.sch.bound, 2) + " ms (gap " + fixed(*c.sch.gap * 100, 2) + "%)";
  }
  return s;
}

// One line of text that fits `max_width` px: ellipsized, with the full text as tooltip when cut.
void fitted_text(std::string& out, double x, double y, const std::string& s, double font_size,
                 double max_width, std::string_view attrs) {
  const auto max_glyphs = static_cast<std::size_t>(std::max(4.0, max_width / (font_size * 0.58)));
  const std::string shown = ellipsize(s, max_glyphs);
  std::string content = escape(shown);
  if (shown != s) content = "<title>" + escape(s) + "</title>" + content;
  text(out, x, y, content, attrs);
}

double write_header(std::string& out, const Context& c, double y) {
  const double x = kMargin, max_w = c.width - 2 * kMargin;
  const std::string name = c.inst.name.empty() ? std::string("(unnamed instance)") : c.inst.name;
  const std::string stats = status_line(c);
  if (c.opt.title.empty()) {
    // Name (bold, ellipsized to leave room for the statistics), then the statistics.
    const double stats_w = text_width(glyphs(stats) + 14, 15);
    const auto name_glyphs = static_cast<std::size_t>(std::max(8.0, (max_w - stats_w) / (15 * 0.6)));
    const std::string shown = ellipsize(name, name_glyphs);
    std::string content = "<tspan font-weight=\"bold\">";
    if (shown != name) content += "<title>" + escape(name) + "</title>";
    content += escape(shown) + "</tspan>  \u2014  " + escape(stats) + feasibility_markup(c);
    text(out, x, y + 15, content, "font-size=\"15\" fill=\"#1A1A1A\"");
    y += 22;
  } else {
    fitted_text(out, x, y + 15, c.opt.title, 15, max_w,
                "font-size=\"15\" font-weight=\"bold\" fill=\"#1A1A1A\"");
    y += 22;
    const std::string content =
        escape(ellipsize(name, 60)) + "  \u2014  " + escape(stats) + feasibility_markup(c);
    text(out, x, y + 11, content, "font-size=\"11\" fill=\"#333333\"");
    y += 16;
  }
  fitted_text(out, x, y + 11, info_line(c), 11, max_w, "font-size=\"11\" fill=\"#666666\"");
  y += 16;
  if (!c.sim.feasible) {
    const std::string why =
        "Infeasible: " + (c.sim.reason.empty() ? std::string("(no reason given)") : c.sim.reason);
    fitted_text(out, x, y + 11, why, 11, max_w,
                std::string("class=\"reason\" font-size=\"11\" fill=\"") + kLimitColour + "\"");
    y += 16;
  }
  return y;
}

// ---------------------------------------------------------------------------------------------
// Legend

struct LegendItem {
  enum class Swatch { kBox, kShades, kArea, kDashed, kFaint, kMakespan } swatch;
  Rgb colour;
  std::string label;
};

std::vector<LegendItem> legend_items(const Context& c) {
  using S = LegendItem::Swatch;
  std::vector<LegendItem> items;
  items.push_back({S::kBox, kForward, "F forward"});
  items.push_back(
      {S::kBox, kBackward, c.inst.split_backward ? "B backward (input)" : "B backward (fused B+W)"});
  if (c.inst.split_backward) items.push_back({S::kBox, kWeight, "W backward (weights)"});
  if (c.multi_stage) items.push_back({S::kShades, kForward, "lighter shade: the GPU's later stage"});
  if (c.opt.transfers && !c.sim.transfers.empty()) {
    items.push_back({S::kBox, kOffload, "D2H offload"});
    items.push_back({S::kBox, kReload, "H2D reload"});
  }
  if (c.opt.memory) {
    items.push_back({S::kArea, {}, "memory in use"});
    items.push_back({S::kDashed, {}, "memory limit"});
    items.push_back({S::kFaint, {}, "static memory"});
  }
  items.push_back({S::kMakespan, {}, c.sim.feasible ? "makespan" : "where it stopped"});
  return items;
}

double swatch_width(const LegendItem& item) { return item.swatch == LegendItem::Swatch::kShades ? 40 : 18; }

void write_swatch(std::string& out, const LegendItem& item, double x, double y) {
  using S = LegendItem::Swatch;
  const double mid = y + 5;
  switch (item.swatch) {
    case S::kBox: rect(out, x, y, 18, 10, "fill=\"" + hex(item.colour) + "\""); break;
    case S::kShades: {
      const Rgb cs[] = {kForward, kBackward, kWeight};
      for (int i = 0; i < 3; ++i)
        rect(out, x + 14.0 * i, y, 12, 10, "fill=\"" + hex(lighten(cs[i], 0.55)) + "\"");
      break;
    }
    case S::kArea:
      rect(out, x, y, 18, 10,
           std::string("fill=\"") + kMemoryFill + "\" stroke=\"" + kMemoryStroke + "\" stroke-width=\"1\"");
      break;
    case S::kDashed:
      line(out, x, mid, x + 18, mid,
           std::string("stroke=\"") + kLimitColour + "\" stroke-width=\"1.5\" stroke-dasharray=\"4 2\"");
      break;
    case S::kFaint:
      line(out, x, mid, x + 18, mid, "stroke=\"#999999\" stroke-width=\"1\" stroke-dasharray=\"1 2\"");
      break;
    case S::kMakespan:
      line(out, x, mid, x + 18, mid, "stroke=\"#1A1A1A\" stroke-width=\"1.2\" stroke-dasharray=\"5 3\"");
      break;
  }
}

double write_legend(std::string& out, const Context& c, double y) {
  const double font = 11, row_h = 16;
  double x = kMargin;
  y += 4;
  for (const LegendItem& item : legend_items(c)) {
    const double w = swatch_width(item) + 5 + text_width(glyphs(item.label), font) + 18;
    if (x + w > c.width - kMargin && x > kMargin) {
      x = kMargin;
      y += row_h;
    }
    write_swatch(out, item, x, y + 1);
    text(out, x + swatch_width(item) + 5, y + 10, escape(item.label), "font-size=\"11\" fill=\"#333333\"");
    x += w;
  }
  return y + row_h + 4;
}

// ---------------------------------------------------------------------------------------------
// Time axis, grid, makespan

void write_tick_labels(std::string& out, const Context& c, double baseline) {
  const TimeAxis& a = c.axis;
  const auto n = static_cast<int>(std::floor(a.end / a.step + 1e-9));
  for (int i = 0; i <= n; ++i) {
    const double t = i * a.step;
    const std::string label = fixed(t, a.tick_decimals) + (i == 0 ? " ms" : "");
    const char* anchor = i == 0 ? "start" : "middle";
    text(out, a.x(t), baseline, escape(label),
         std::string("class=\"tick\" font-size=\"10\" fill=\"#555555\" text-anchor=\"") + anchor + "\"");
  }
}

void write_grid(std::string& out, const Context& c) {
  const TimeAxis& a = c.axis;
  const auto n = static_cast<int>(std::floor(a.end / a.step + 1e-9));
  for (int i = 0; i <= n; ++i) {
    const double x = a.x(i * a.step);
    line(out, x, c.plot_top, x, c.plot_bottom, std::string("stroke=\"") + kGrid + "\" stroke-width=\"1\"");
  }
}

void write_makespan(std::string& out, const Context& c, double label_baseline) {
  const double x = c.axis.x(c.sim.makespan);
  const std::string label =
      (c.sim.feasible ? "makespan " : "stopped at ") + c.axis.time(c.sim.makespan) + " ms";
  line(out, x, c.plot_top - 2, x, c.plot_bottom,
       "class=\"makespan\" stroke=\"#1A1A1A\" stroke-width=\"1.2\" stroke-dasharray=\"5 3\"", label);
  const bool room_left = x - text_width(glyphs(label), 10) - 4 >= c.axis.left;
  text(out, room_left ? x - 3 : x + 3, label_baseline, escape(label),
       std::string("font-size=\"10\" font-weight=\"bold\" fill=\"#1A1A1A\" text-anchor=\"") +
           (room_left ? "end" : "start") + "\"");
}

// ---------------------------------------------------------------------------------------------
// Device rows

void write_backgrounds(std::string& out, const Context& c, int d) {
  const DeviceRows& r = c.rows[d];
  const double x = c.axis.left, w = c.axis.right - c.axis.left;
  rect(out, x, r.op, w, kOpRow, "fill=\"#F2F2F2\"");
  if (r.d2h >= 0) rect(out, x, r.d2h, w, kLane, "fill=\"#F7F5FA\"");
  if (r.h2d >= 0) rect(out, x, r.h2d, w, kLane, "fill=\"#F3F8F7\"");
  if (r.chart >= 0)
    rect(out, x, r.chart, w, kMemChart, "fill=\"#FFFFFF\" stroke=\"#D0D0D0\" stroke-width=\"0.8\"");
}

std::string stage_list(const std::vector<int>& stages) {
  std::string s = stages.size() == 1 ? "stage " : "stages ";
  for (std::size_t i = 0; i < stages.size(); ++i) s += (i ? ", " : "") + std::to_string(stages[i]);
  return s;
}

void write_row_labels(std::string& out, const Context& c, int d) {
  const DeviceRows& r = c.rows[d];
  const double x = c.axis.left - 8, max_w = kLabelColumn - 12;
  text(out, x, r.op + 12, escape(gpu(d)),
       "font-size=\"12\" font-weight=\"bold\" fill=\"#1A1A1A\" text-anchor=\"end\"");
  fitted_text(out, x, r.op + 23, stage_list(c.stages[d]), 9, max_w,
              "font-size=\"9\" fill=\"#666666\" text-anchor=\"end\"");
  if (r.d2h >= 0)
    text(out, x, r.d2h + 9, "D2H", "font-size=\"9\" fill=\"" + hex(kOffload) + "\" text-anchor=\"end\"");
  if (r.h2d >= 0)
    text(out, x, r.h2d + 9, "H2D", "font-size=\"9\" fill=\"" + hex(kReload) + "\" text-anchor=\"end\"");
}

// A centred label inside a box of width `w` when it fits at a readable size (≥ 6.5 px).
void box_label(std::string& out, double x, double y, double w, double h, const std::string& label,
               double max_font, const char* colour) {
  const double font = std::min(max_font, (w - 3) / (static_cast<double>(label.size()) * 0.62));
  if (font < 6.5) return;
  text(out, x + w / 2, y + h / 2 + font * 0.36, escape(label),
       std::string("class=\"label\" font-size=\"") + fixed(font, 1) + "\" fill=\"" + colour +
           "\" text-anchor=\"middle\" pointer-events=\"none\"");
}

std::string op_tooltip(const Context& c, int d, const Action& a, const ActionTiming& tm) {
  std::string s(1, type_letter(a.type));
  s += std::to_string(a.stage) + "." + std::to_string(a.mb) + " on " + gpu(d) + ": " + c.axis.time(tm.start) +
       "\u2013" + c.axis.time(tm.end) + " ms (stage " + std::to_string(a.stage) + ", microbatch " +
       std::to_string(a.mb) + ")";
  if (a.type == OpType::F && a.r > 0) s += ", offloads " + percent(a.r);
  return s;
}

void write_ops(std::string& out, const Context& c, int d) {
  if (d >= static_cast<int>(c.sch.devices.size()) || d >= static_cast<int>(c.sim.timeline.size())) return;
  const auto& list = c.sch.devices[d];
  const auto& timing = c.sim.timeline[d];
  const std::vector<int>& mine = c.stages[d];
  const double y = c.rows[d].op + 2, h = kOpRow - 4;
  for (std::size_t k = 0; k < list.size() && k < timing.size(); ++k) {
    const Action& a = list[k];
    if (!a.is_compute() || !timing[k].done()) continue;
    const auto it = std::find(mine.begin(), mine.end(), a.stage);
    const int shade = it == mine.end() ? 0 : static_cast<int>(it - mine.begin());
    const Rgb colour = stage_shade(type_colour(a.type), shade, static_cast<int>(mine.size()));
    const double x0 = c.axis.x(timing[k].start), w = std::max(c.axis.x(timing[k].end) - x0, 0.8);
    const char* type = a.type == OpType::F ? "F" : (a.type == OpType::B ? "B" : "W");
    rect(out, x0, y, w, h,
         std::string("class=\"op ") + type + "\" fill=\"" + hex(colour) +
             "\" stroke=\"#FFFFFF\" stroke-width=\"0.6\"",
         op_tooltip(c, d, a, timing[k]));
    if (a.type == OpType::F && a.r > 0) {
      // A purple strip along the bottom, as long as the offloaded fraction.
      rect(out, x0, y + h - 3, w * std::min(a.r, 1.0), 3,
           "fill=\"" + hex(kOffload) + "\" pointer-events=\"none\"");
    }
    box_label(out, x0, y, w, h - (a.r > 0 ? 2 : 0), std::to_string(a.mb), 11, text_colour_on(colour));
  }
}

std::string transfer_tooltip(const Context& c, const Transfer& t) {
  const bool off = t.kind == Transfer::Kind::kOffload;
  const std::string op = std::to_string(t.stage) + "." + std::to_string(t.mb);
  std::string s = off ? "offload (D2H) of F" + op : "reload (H2D) of " + op;
  s += " on " + gpu(t.device) + ": " + format_bytes(t.bytes) + " (" + percent(t.r) +
       " of the activation); requested " + c.axis.time(t.request) + " ms";
  if (!t.started) return s + ", never started";
  s += ", runs " + c.axis.time(t.start) + "\u2013" + c.axis.time(t.end) + " ms";
  if (t.start - t.request > kTimeEps) s += " (waited " + c.axis.time(t.start - t.request) + " ms)";
  const long shared = std::count(c.sim.group_of_device.begin(), c.sim.group_of_device.end(), t.group);
  if (shared > 1)
    s += "; PCIe group " + std::to_string(t.group) + " shared by " + std::to_string(shared) + " GPUs";
  return s;
}

void write_transfers(std::string& out, const Context& c, int d) {
  for (const Transfer& t : c.sim.transfers) {
    if (t.device != d) continue;
    const bool off = t.kind == Transfer::Kind::kOffload;
    const double lane = off ? c.rows[d].d2h : c.rows[d].h2d;
    if (lane < 0) continue;
    const Rgb colour = off ? kOffload : kReload;
    const std::string cls = off ? "xfer d2h" : "xfer h2d";
    if (!t.started) {
      const double x = c.axis.x(t.request);
      rect(out, x - 3, lane + 2, 6, kLane - 4,
           "class=\"" + cls + " pending\" fill=\"none\" stroke=\"" + hex(colour) + "\" stroke-width=\"1.2\"",
           transfer_tooltip(c, t));
      continue;
    }
    const double x0 = c.axis.x(t.start), w = std::max(c.axis.x(t.end) - x0, 0.8);
    rect(out, x0, lane + 1, w, kLane - 2,
         "class=\"" + cls + "\" fill=\"" + hex(colour) + "\" stroke=\"#FFFFFF\" stroke-width=\"0.5\"",
         transfer_tooltip(c, t));
    box_label(out, x0, lane + 1, w, kLane - 2, std::to_string(t.mb), 9, "#FFFFFF");
  }
}

struct MemoryScale {
  double top = 1, bottom = 0, peak = 0, limit = 0, statics = 0;
  bool limit_off_scale = false;
};

MemoryScale memory_scale(const Context& c, int d) {
  MemoryScale m;
  m.limit = c.inst.devices[d].memory_limit;
  m.statics = c.inst.devices[d].static_memory;
  if (d < static_cast<int>(c.sim.peak_memory.size())) m.peak = c.sim.peak_memory[d];
  if (d < static_cast<int>(c.sim.memory.size())) {
    for (const MemoryPoint& p : c.sim.memory[d]) m.peak = std::max(m.peak, p.bytes);
  }
  // The scale starts a little below static memory: what changes over time is the activations
  // above it, and that is what should fill the chart.
  const double base = std::max(m.peak, m.statics);
  const double above = base - m.statics;
  m.limit_off_scale = !std::isfinite(m.limit) || (above > 0 && m.limit - m.statics > 20 * above) ||
                      (above <= 0 && base > 0 && m.limit > 20 * base);
  const double high = m.limit_off_scale ? base : std::max(m.limit, base);
  m.bottom = std::max(0.0, m.statics - 0.1 * (high - m.statics));
  m.top = high + 0.05 * (high - m.bottom);
  if (!(m.top > m.bottom)) {
    m.bottom = 0;
    m.top = high > 0 ? 1.05 * high : 1;
  }
  return m;
}

// The step curve as a closed path from the axis end back along the baseline.
std::string memory_path(const Context& c, const std::vector<MemoryPoint>& curve, double static_bytes,
                        const std::function<double(double)>& y_of) {
  std::vector<MemoryPoint> pts = curve;
  if (pts.empty() || pts.front().time > 0) pts.insert(pts.begin(), MemoryPoint{0.0, static_bytes});
  const double base = y_of(0);
  std::string d = "M" + px(c.axis.x(pts.front().time)) + "," + px(base);
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const double t_next = i + 1 < pts.size() ? pts[i + 1].time : c.axis.end;
    const double y = y_of(pts[i].bytes);
    d += " L" + px(c.axis.x(pts[i].time)) + "," + px(y) + " L" + px(c.axis.x(std::max(t_next, pts[i].time))) +
         "," + px(y);
  }
  d += " L" + px(c.axis.x(c.axis.end)) + "," + px(base) + " Z";
  return d;
}

void write_memory(std::string& out, const Context& c, int d) {
  const DeviceRows& r = c.rows[d];
  if (r.chart < 0) return;
  const MemoryScale m = memory_scale(c, d);
  const double left = c.axis.left, right = c.axis.right, bottom = r.chart + kMemChart;
  const std::function<double(double)> y_of = [&](double bytes) {
    return bottom - kMemChart * std::clamp((bytes - m.bottom) / (m.top - m.bottom), 0.0, 1.0);
  };
  const bool has_curve = d < static_cast<int>(c.sim.memory.size()) && !c.sim.memory[d].empty();
  if (has_curve) {
    out += "<path class=\"memory\" d=\"" + memory_path(c, c.sim.memory[d], m.statics, y_of) + "\" fill=\"" +
           kMemoryFill + "\" stroke=\"" + kMemoryStroke +
           "\" stroke-width=\"1\" stroke-linejoin=\"round\"/>\n";
    // The first moment of the peak.
    for (const MemoryPoint& p : c.sim.memory[d]) {
      if (p.bytes < m.peak - kMemoryTolerance) continue;
      out += "<circle cx=\"" + px(c.axis.x(p.time)) + "\" cy=\"" + px(y_of(p.bytes)) +
             "\" r=\"2.5\" fill=\"" + std::string(kMemoryStroke) + "\"><title>" +
             escape("peak " + format_bytes(m.peak) + " at " + c.axis.time(p.time) + " ms") +
             "</title></circle>\n";
      break;
    }
  }
  if (m.statics > 0) {
    line(out, left, y_of(m.statics), right, y_of(m.statics),
         "class=\"static\" stroke=\"#999999\" stroke-width=\"1\" stroke-dasharray=\"1 2\"",
         "static memory " + format_bytes(m.statics));
  }
  const double y_limit = m.limit_off_scale ? r.chart : y_of(m.limit);
  line(out, left, y_limit, right, y_limit,
       std::string("class=\"limit\" stroke=\"") + kLimitColour +
           "\" stroke-width=\"1.5\" stroke-dasharray=\"6 3\"",
       "memory limit " + format_bytes(m.limit) +
           (m.limit_off_scale ? " (far above the peak: off scale)" : ""));
  // Caption and scale labels.
  std::string caption = "memory: peak " +
                        (has_curve || m.peak > 0 ? format_bytes(m.peak) : std::string("n/a")) + " / limit " +
                        format_bytes(m.limit) + (m.limit_off_scale ? " (off scale)" : "");
  if (m.statics > 0) caption += " \u00b7 static " + format_bytes(m.statics);
  if (m.peak > m.limit + kMemoryTolerance) caption += " \u00b7 OVER THE LIMIT";
  text(out, left + 2, r.caption + 10, escape(caption), "class=\"peak\" font-size=\"10\" fill=\"#333333\"");
  const double x = left - 8;
  text(out, x, r.chart + 8, escape(format_bytes(m.top)),
       "font-size=\"8.5\" fill=\"#666666\" text-anchor=\"end\"");
  text(out, x, bottom, escape(m.bottom > 0 ? format_bytes(m.bottom) : std::string("0")),
       "font-size=\"8.5\" fill=\"#666666\" text-anchor=\"end\"");
  text(out, x, r.chart + kMemChart / 2 + 3, "memory", "font-size=\"9\" fill=\"#666666\" text-anchor=\"end\"");
}

// ---------------------------------------------------------------------------------------------

Context make_context(const Instance& inst, const Schedule& sch, const SimResult& sim,
                     const SvgGanttOptions& opt) {
  Context c{inst, sch, sim, opt, inst.stages_by_device(), false, {}, {}, 0, 0, 0, 0};
  for (const auto& s : c.stages) c.multi_stage = c.multi_stage || s.size() > 1;
  c.width = std::max(opt.width, 320);
  c.axis = make_axis(kMargin + kLabelColumn, c.width - kMargin - 10, axis_end(sim));
  return c;
}

}  // namespace

double nice_tick_step(double span, int max_ticks) {
  if (!(span > 0) || !std::isfinite(span)) return 1.0;
  const double raw = span / std::max(1, max_ticks);
  double step = std::pow(10.0, std::floor(std::log10(raw)));
  for (double f : {1.0, 2.0, 5.0, 10.0}) {
    if (f * step >= raw * (1 - 1e-12)) return f * step;
  }
  return 10 * step;
}

std::string render_svg_gantt(const Instance& instance, const Schedule& schedule, const SimResult& sim,
                             const SvgGanttOptions& options) {
  Context c = make_context(instance, schedule, sim, options);
  std::string body;
  double y = write_header(body, c, kMargin - 4);
  y = write_legend(body, c, y);
  const double makespan_baseline = y + 10, top_ticks = y + kMakespanBand + 10;
  c.plot_top = y + kMakespanBand + kAxisLabels - 2;
  y = c.plot_top + 4;
  for (int d = 0; d < instance.num_devices(); ++d) y = layout_device(c, d, y);
  c.plot_bottom = y - kDeviceGap + 4;
  const double bottom_ticks = c.plot_bottom + 12;
  c.height = bottom_ticks + kMargin;

  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + px(c.width) + "\" height=\"" +
         px(c.height) + "\" viewBox=\"0 0 " + px(c.width) + " " + px(c.height) +
         "\" font-family=\"sans-serif\">\n";
  out += "<title>" +
         escape("Gantt chart of " + (instance.name.empty() ? std::string("a schedule") : instance.name)) +
         "</title>\n";
  rect(out, 0, 0, c.width, c.height, "fill=\"#FFFFFF\"");
  out += body;
  for (int d = 0; d < instance.num_devices(); ++d) write_backgrounds(out, c, d);
  write_grid(out, c);
  write_tick_labels(out, c, top_ticks);
  write_tick_labels(out, c, bottom_ticks);
  for (int d = 0; d < instance.num_devices(); ++d) {
    write_row_labels(out, c, d);
    write_ops(out, c, d);
    write_transfers(out, c, d);
    write_memory(out, c, d);
  }
  write_makespan(out, c, makespan_baseline);
  out += "</svg>\n";
  return out;
}

}  // namespace optpipe
