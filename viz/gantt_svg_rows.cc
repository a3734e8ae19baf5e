// The SVG Gantt chart's device rows (gantt_svg_parts.h): backgrounds, row labels, compute ops
// with their microbatch labels, and the offload / reload lanes.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "model/action.h"
#include "model/bytes.h"
#include "viz/gantt_svg_parts.h"

namespace optpipe::gantt {

using namespace svg;

namespace {

Rgb type_colour(OpType t) {
  switch (t) {
    case OpType::F: return kForward;
    case OpType::B: return kBackward;
    default: return kWeight;
  }
}

// Shade of the k-th of n stages of a device: the first at full colour, the last 55% lighter.
Rgb stage_shade(Rgb c, int k, int n) { return n <= 1 ? c : lighten(c, 0.55 * k / (n - 1)); }

std::string stage_list(const std::vector<int>& stages) {
  std::string s = stages.size() == 1 ? "stage " : "stages ";
  for (std::size_t i = 0; i < stages.size(); ++i) s += (i ? ", " : "") + std::to_string(stages[i]);
  return s;
}

}  // namespace

void write_backgrounds(std::string& out, const Chart& c, int d) {
  const DeviceRows& r = c.rows[d];
  const double x = c.axis.left, w = c.axis.right - c.axis.left;
  rect(out, x, r.op, w, kOpRow, "fill=\"#F2F2F2\"");
  if (r.d2h >= 0) rect(out, x, r.d2h, w, kLane, "fill=\"#F7F5FA\"");
  if (r.h2d >= 0) rect(out, x, r.h2d, w, kLane, "fill=\"#F3F8F7\"");
  if (r.chart >= 0)
    rect(out, x, r.chart, w, kMemChart, "fill=\"#FFFFFF\" stroke=\"#D0D0D0\" stroke-width=\"0.8\"");
}

void write_row_labels(std::string& out, const Chart& c, int d) {
  // The name in the label lane's height, so that the stages and the idle share fit beside the ops.
  const DeviceRows& r = c.rows[d];
  const double x = c.axis.left - 8, max_w = kLabelColumn - 12;
  text(out, x, r.op - 1, escape(gpu(d)), "font-size=\"12\" font-weight=\"bold\" fill=\"#1A1A1A\" text-anchor=\"end\"");
  fitted_text(out, x, r.op + 11, stage_list(c.stages[d]), 9, max_w, "font-size=\"9\" fill=\"#666666\" text-anchor=\"end\"");
  const std::string idle = idle_label(c, d);
  if (!idle.empty()) {
    text(out, x, r.op + 22, "<title>" + escape(idle_tooltip(c, d)) + "</title>" + escape(idle),
         "class=\"idle\" font-size=\"9\" fill=\"#333333\" text-anchor=\"end\"");
  }
  if (r.d2h >= 0)
    text(out, x, r.d2h + 9, "D2H", "font-size=\"9\" fill=\"" + hex(kOffload) + "\" text-anchor=\"end\"");
  if (r.h2d >= 0)
    text(out, x, r.h2d + 9, "H2D", "font-size=\"9\" fill=\"" + hex(kReload) + "\" text-anchor=\"end\"");
}

namespace {

// A centred label inside a transfer's box when it fits (the rule of in-box op labels).
void box_label(std::string& out, double x, double y, double w, double h, const std::string& label,
               double max_font, const char* colour) {
  const double font = in_box_font(w, h, label.size(), max_font);
  if (font <= 0) return;
  text(out, x + w / 2, centred_baseline(y, h, font), escape(label),
       std::string("class=\"label xfer-label\" font-size=\"") + fixed(font, 1) + "\" fill=\"" + colour +
           "\" text-anchor=\"middle\" pointer-events=\"none\"");
}

std::string op_tooltip(const Chart& c, int d, const Action& a, const ActionTiming& tm) {
  std::string s(1, type_letter(a.type));
  s += std::to_string(a.stage) + "." + std::to_string(a.mb) + " on " + gpu(d) + ": " + c.axis.time(tm.start) +
       "\u2013" + c.axis.time(tm.end) + " ms (stage " + std::to_string(a.stage) + ", microbatch " +
       std::to_string(a.mb) + ")";
  if (a.type == OpType::F && a.r > 0) s += ", offloads " + percent(a.r);
  return s;
}

}  // namespace

void collect_ops(Chart& c) {
  c.ops.clear();
  const double h = kOpRow - 4;
  for (int d = 0; d < c.inst.num_devices(); ++d) {
    if (d >= static_cast<int>(c.sch.devices.size()) || d >= static_cast<int>(c.sim.timeline.size())) continue;
    const auto& list = c.sch.devices[d];
    const auto& timing = c.sim.timeline[d];
    const std::vector<int>& mine = c.stages[d];
    for (std::size_t k = 0; k < list.size() && k < timing.size(); ++k) {
      const Action& a = list[k];
      if (!a.is_compute() || !timing[k].done()) continue;
      const auto it = std::find(mine.begin(), mine.end(), a.stage);
      const int shade = it == mine.end() ? 0 : static_cast<int>(it - mine.begin());
      OpBox b;
      b.device = d;
      b.index = k;
      b.type = a.type;
      b.mb = a.mb;
      b.fill = stage_shade(type_colour(a.type), shade, static_cast<int>(mine.size()));
      b.x = c.axis.x(timing[k].start);
      b.w = std::max(c.axis.x(timing[k].end) - b.x, 0.8);
      b.y = c.rows[d].op + 2;
      b.h = h - (a.type == OpType::F && a.r > 0 ? 3 : 0);  // above the offload strip
      c.ops.push_back(b);
    }
  }
}

void write_ops(std::string& out, const Chart& c, int d) {
  const double h = kOpRow - 4;
  for (const OpBox& b : c.ops) {
    if (b.device != d) continue;
    const Action& a = c.sch.devices[d][b.index];
    const char* type = a.type == OpType::F ? "F" : (a.type == OpType::B ? "B" : "W");
    // data-mb (and data-lh, the height a label may use when less than the box's) for the script,
    // which labels the ops again when it zooms.
    std::string attrs = std::string("class=\"op ") + type + "\" data-mb=\"" + std::to_string(b.mb) + "\" ";
    if (b.h < h) attrs += "data-lh=\"" + px(b.h) + "\" ";
    rect(out, b.x, b.y, b.w, h, attrs + "fill=\"" + hex(b.fill) + "\" stroke=\"#FFFFFF\" stroke-width=\"0.6\"",
         op_tooltip(c, d, a, c.sim.timeline[d][b.index]));
    if (a.type == OpType::F && a.r > 0) {
      // A purple strip along the bottom, as long as the offloaded fraction.
      rect(out, b.x, b.y + h - 3, b.w * std::min(a.r, 1.0), 3,
           "fill=\"" + hex(kOffload) + "\" pointer-events=\"none\"");
    }
  }
}

namespace {

std::string transfer_tooltip(const Chart& c, const Transfer& t) {
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

}  // namespace

void write_transfers(std::string& out, const Chart& c, int d) {
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
         "class=\"" + cls + "\" data-mb=\"" + std::to_string(t.mb) + "\" fill=\"" + hex(colour) +
             "\" stroke=\"#FFFFFF\" stroke-width=\"0.5\"",
         transfer_tooltip(c, t));
  }
}

void write_transfer_labels(std::string& out, const Chart& c, int d) {
  for (const Transfer& t : c.sim.transfers) {
    const double lane = t.device != d ? -1 : (t.kind == Transfer::Kind::kOffload ? c.rows[d].d2h : c.rows[d].h2d);
    if (lane < 0 || !t.started) continue;
    const double x0 = c.axis.x(t.start), w = std::max(c.axis.x(t.end) - x0, 0.8);
    box_label(out, x0, lane + 1, w, kLane - 2, std::to_string(t.mb), kMaxTransferFont, "#FFFFFF");
  }
}

}  // namespace optpipe::gantt
