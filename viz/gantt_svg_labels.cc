// The SVG Gantt chart's microbatch labels (gantt_svg_parts.h): which op gets its number inside
// its box, which one above its row, and where.
#include <algorithm>
#include <string>
#include <vector>

#include "viz/gantt_svg_parts.h"

namespace optpipe::gantt {

using namespace svg;

double in_box_font(double w, double h, std::size_t chars, double max_font) {
  const double by_width = (w - 2 * kBoxPad) / (static_cast<double>(chars) * kGlyphEm);
  const double font = std::min({max_font, by_width, h - 1});
  return font >= kMinBoxFont ? font : 0.0;
}

// Digits have no descender and a cap height of about 0.72 em: this centres them.
double centred_baseline(double y, double h, double font) { return y + h / 2 + font * 0.36; }

namespace {

std::size_t digits(int mb) { return std::to_string(mb).size(); }

// 1, 2, 5, 10, 20, 50, ... up to the first at or above `most` (as the script's labelEvery).
std::vector<int> label_steps(int most) {
  std::vector<int> steps;
  for (int decade = 1;; decade *= 10) {
    for (int f : {1, 2, 5}) {
      steps.push_back(f * decade);
      if (steps.back() >= most) return steps;
    }
  }
}

// Lane labels of one row for candidates (indices into c.ops, by increasing x) whose mb is a
// multiple of `every`; returns them and counts in `collisions` those left out for lack of room
// (a label would come within kLaneGapPx of the one before it) whose number is not the one before.
std::vector<OpLabel> lane_labels(const Chart& c, const std::vector<std::size_t>& candidates, int every,
                                 int& collisions) {
  std::vector<OpLabel> out;
  double last_right = -1e300;
  for (std::size_t i : candidates) {
    const OpBox& b = c.ops[i];
    if (b.mb % every != 0) continue;
    // Centred on the box, or moved inwards at the plot's ends: it still spans the box's centre.
    const double half = text_width(digits(b.mb), kLaneFont) / 2;
    const double cx = std::clamp(b.x + b.w / 2, c.axis.left + half, c.axis.right - half);
    if (cx - half < last_right + kLaneGapPx) {
      // Left out; it counts unless the label before it has the same number (B and W of one
      // microbatch side by side: one label serves both).
      if (c.ops[out.back().box].mb != b.mb) ++collisions;
      continue;
    }
    last_right = cx + half;
    out.push_back({i, cx, b.y - kLaneBaselineAboveBox, kLaneFont, true});
  }
  return out;
}

}  // namespace

void plan_labels(Chart& c) {
  c.labels.clear();
  std::vector<std::vector<std::size_t>> narrow(c.rows.size());  // per device, by increasing x
  for (std::size_t i = 0; i < c.ops.size(); ++i) {
    const OpBox& b = c.ops[i];
    const double font = in_box_font(b.w, b.h, digits(b.mb), kMaxBoxFont);
    if (font > 0) {
      c.labels.push_back({i, b.x + b.w / 2, centred_baseline(b.y, b.h, font), font, false});
    } else {
      narrow[b.device].push_back(i);
    }
  }
  for (auto& row : narrow) {
    std::sort(row.begin(), row.end(), [&](std::size_t a, std::size_t b) { return c.ops[a].x < c.ops[b].x; });
  }
  // The smallest N at which at most a tenth of the labels collide; else the N with the fewest.
  int best_every = 1;
  double best_share = 2;
  for (int every : label_steps(std::max(1, c.inst.microbatches))) {
    int collisions = 0;
    std::size_t placed = 0;
    for (const auto& row : narrow) placed += lane_labels(c, row, every, collisions).size();
    const double share = collisions == 0 ? 0.0 : collisions / static_cast<double>(collisions + placed);
    if (share < best_share) best_every = every, best_share = share;
    if (share <= kMaxLaneCollisions) break;
  }
  c.label_every = best_every;
  int ignored = 0;
  for (const auto& row : narrow) {
    for (const OpLabel& l : lane_labels(c, row, best_every, ignored)) c.labels.push_back(l);
  }
}

void write_op_labels(std::string& out, const Chart& c, int d) {
  for (const OpLabel& l : c.labels) {
    const OpBox& b = c.ops[l.box];
    if (b.device != d) continue;
    const std::string mb = std::to_string(b.mb);
    if (!l.above) {
      text(out, l.x, l.baseline, mb,
           std::string("class=\"label\" font-size=\"") + fixed(l.font, 1) + "\" fill=\"" + text_colour_on(b.fill) +
               "\" text-anchor=\"middle\" pointer-events=\"none\"");
      continue;
    }
    const Rgb base = b.type == OpType::F ? kForward : (b.type == OpType::B ? kBackward : kWeight);
    const std::string colour = hex(darken(base, kLaneDarken));
    const double tick = b.x + b.w / 2;
    line(out, tick, l.baseline + 1.5, tick, b.y, "class=\"tick-mb\" stroke=\"" + colour + "\" stroke-width=\"1\"");
    text(out, l.x, l.baseline, mb,
         "class=\"label above\" font-size=\"" + fixed(l.font, 1) + "\" fill=\"" + colour +
             "\" text-anchor=\"middle\" pointer-events=\"none\"");
  }
}

}  // namespace optpipe::gantt
