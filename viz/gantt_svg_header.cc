// The SVG Gantt chart's header (gantt_svg_parts.h): the title with makespan, bubble and status,
// the instance line, the infeasibility reason, and the legend.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "viz/gantt_svg_parts.h"

namespace optpipe::gantt {

using namespace svg;

namespace {

// Makespan and bubble; an infeasible run has neither, only the time it stopped at.
std::string status_line(const Chart& c) {
  if (!c.sim.feasible) {
    return "stopped at " + fixed(c.sim.makespan, 2) + " ms (no makespan, no bubble) \u00b7 ";
  }
  return "makespan " + fixed(c.sim.makespan, 2) + " ms \u00b7 bubble " + fixed(c.sim.bubble * 100, 1) +
         "% \u00b7 ";
}

// One wording of what is known about the schedule, for the title line: "INFEASIBLE" (the
// simulation deadlocked), "proven optimal" (the solver says so), "feasible, gap 1.45% (lower
// bound 654.48 ms)" (the solver stopped with a bound), or "feasible" (no bound, e.g. a heuristic).
std::string status_words(const Chart& c) {
  if (!c.sim.feasible) return "INFEASIBLE";
  if (c.sch.status == "optimal") return "proven optimal";
  if (!c.sch.bound) return "feasible";
  const double makespan = c.sim.makespan;
  const double gap = c.sch.gap ? *c.sch.gap : (makespan > 0 ? std::max(0.0, (makespan - *c.sch.bound) / makespan) : 0);
  return "feasible, gap " + fixed(gap * 100, 2) + "% (lower bound " + fixed(*c.sch.bound, 2) + " ms)";
}

std::string status_tooltip(const Chart& c) {
  if (!c.sim.feasible) return "the simulation stopped before every op ran (the reason is under the title)";
  if (c.sch.status == "optimal") return "the solver proved that no schedule of this instance is faster";
  if (!c.sch.bound) return "the schedule runs within every limit; no lower bound is known";
  return "the schedule runs within every limit; the solver proved that no schedule is faster than the lower bound";
}

std::string status_markup(const Chart& c) {
  const std::string attrs =
      c.sim.feasible ? "fill=\"#228833\"" : std::string("fill=\"") + kLimitColour + "\" font-weight=\"bold\"";
  return "<tspan class=\"status\" " + attrs + "><title>" + escape(status_tooltip(c)) + "</title>" +
         escape(status_words(c)) + "</tspan>";
}

// Instance, placement, backward and the schedule's origin; the status is the title's alone.
std::string info_line(const Chart& c) {
  const Instance& i = c.inst;
  std::string s = std::to_string(i.num_devices()) + (i.num_devices() == 1 ? " GPU" : " GPUs") + " \u00b7 " +
                  std::to_string(i.num_stages()) + (i.num_stages() == 1 ? " stage" : " stages") +
                  ", placement " + to_string(i.placement()) + " \u00b7 " + std::to_string(i.microbatches) +
                  " microbatches \u00b7 " + (i.split_backward ? "split backward (B + W)" : "fused backward");
  if (!c.sch.solver.empty()) s += " \u00b7 " + c.sch.solver;
  return s;
}

}  // namespace

double write_header(std::string& out, const Chart& c, double y) {
  const double x = kMargin, max_w = c.header_right - kMargin;
  const std::string name = c.inst.name.empty() ? std::string("(unnamed instance)") : c.inst.name;
  const std::string stats = status_line(c);
  if (c.opt.title.empty()) {
    // Name (bold, ellipsized to leave room for the statistics), then the statistics.
    const double stats_w = text_width(glyphs(stats) + glyphs(status_words(c)) + 4, 15);
    const auto name_glyphs = static_cast<std::size_t>(std::max(8.0, (max_w - stats_w) / (15 * 0.6)));
    const std::string shown = ellipsize(name, name_glyphs);
    std::string content = "<tspan font-weight=\"bold\">";
    if (shown != name) content += "<title>" + escape(name) + "</title>";
    content += escape(shown) + "</tspan>  \u2014  " + escape(stats) + status_markup(c);
    text(out, x, y + 15, content, "font-size=\"15\" fill=\"#1A1A1A\"");
    y += 22;
  } else {
    fitted_text(out, x, y + 15, c.opt.title, 15, max_w,
                "font-size=\"15\" font-weight=\"bold\" fill=\"#1A1A1A\"");
    y += 22;
    const std::string content =
        escape(ellipsize(name, 60)) + "  \u2014  " + escape(stats) + status_markup(c);
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

namespace {

struct LegendItem {
  enum class Swatch { kBox, kShades, kArea, kDashed, kFaint, kMakespan } swatch;
  Rgb colour;
  std::string label;
};

std::vector<LegendItem> legend_items(const Chart& c) {
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

}  // namespace

double write_legend(std::string& out, const Chart& c, double y) {
  const double font = 11, row_h = 16;
  double x = kMargin;
  y += 4;
  for (const LegendItem& item : legend_items(c)) {
    const double w = swatch_width(item) + 5 + text_width(glyphs(item.label), font) + 18;
    if (x + w > c.header_right && x > kMargin) {
      x = kMargin;
      y += row_h;
    }
    write_swatch(out, item, x, y + 1);
    text(out, x + swatch_width(item) + 5, y + 10, escape(item.label), "font-size=\"11\" fill=\"#333333\"");
    x += w;
  }
  return y + row_h + 4;
}

}  // namespace optpipe::gantt
