// An SVG Gantt chart of a simulated schedule: a self-contained SVG 1.1 picture for people, with
// an inline script for browsers. The parts are in viz/gantt_svg_*.cc (gantt_svg_parts.h).
//
// Width: options.width, or (0, the default) wide enough that the median compute op has room for
// its microbatch number (1400 to 20000 px: 16 x 64 about 6500 px, 32 x 128 about 18000 px).
//
// Layout, top to bottom:
//   title line     options.title, or "<instance> — makespan 12.34 ms · bubble 5.6% · <status>";
//                  with a custom title the default line follows it in small print. The status
//                  is said there only: "proven optimal", "feasible, gap 1.45% (lower bound
//                  654.48 ms)", "feasible" (no bound) or "INFEASIBLE". An infeasible run has no
//                  makespan: the line says "stopped at <t> ms", and a red line gives sim.reason
//                  (truncated with "…", the full text in its tooltip). A grey line lists GPUs,
//                  stages, placement, microbatches, backward, the schedule's origin.
//   legend         F / B / W (W only with a split backward), "lighter shade: the GPU's later
//                  stage" when some device holds several stages, D2H offload and H2D reload (when
//                  there are transfers), memory in use, memory limit, static memory, makespan.
//   idle summary   one bar per GPU: its idle share of the makespan (its bubble), stacked from
//                  idle before its first op, between its ops and after its last op; the overall
//                  bubble as a dashed line (not for an infeasible run). The header stays within
//                  the first 1400 px.
//   time axis      ms, round tick steps (1/2/5 × 10^k) with light vertical grid lines through all
//                  rows; the makespan is a dashed vertical line labelled on top. The axis is
//                  repeated under the last device.
//   per device d   "GPU d", its stages and "idle 28.2%" left of its row: one rectangle per
//                  compute action (class "op F|B|W"), coloured by type (blue F, orange B, green
//                  W), a device's later stages in lighter shades; idle time shows as the light
//                  grey row background; an F that offloads has a purple strip along its bottom,
//                  as long as its offload fraction. Every box has a tooltip, e.g.
//                  "F3.7 on GPU 1: 12.40–13.50 ms (stage 3, microbatch 7), offloads 50%".
//                  Microbatch labels, the same rule for F, B and W: inside the box when it has
//                  room, else above the row with a tick down to the box for every Nth
//                  microbatch (N = 1, 2, 5, 10, ..., the smallest at which they hardly collide).
//                  Then, when the device has transfers: a thin D2H lane (purple, class
//                  "xfer d2h") and H2D lane (teal, class "xfer h2d"); a transfer that was
//                  requested but never started is a small hollow marker at its request time.
//                  Then the memory chart: the step curve sim.memory[d] as a filled area (the
//                  last value extends to the end of the axis), a red dashed limit line (class
//                  "limit"; drawn at the top edge and marked "off scale" when the room above
//                  static memory is over 20× what the peak uses, e.g. an unlimited device), a
//                  faint static-memory line and a caption "peak 71.2 GiB / limit 80.0 GiB ·
//                  static 30.0 GiB". Its vertical scale runs from a little below static memory
//                  (what changes is the activations above it) to a little above max(limit,
//                  peak), labelled at both ends.
//
// In a browser (options.script): the picture takes the window; drag, the wheel, Shift+wheel and
// the arrow keys pan, Ctrl+wheel (or + and -, f to fit, 0 for 1:1, or the buttons) zooms the
// time axis, labelling the ops again; the GPU names and memory scales stay at the left, the
// header and the time axis at the top. The URL's fragment sets the first view:
// chart.svg#t=1200&gpu=16&zoom=2 (zoom=fit: the whole schedule). Without the script (an <img>,
// scripts off) the same picture renders, static.
//
// Text uses font-family sans-serif; all text is XML-escaped. No external resources.
#pragma once

#include <string>

#include "model/instance.h"
#include "model/schedule.h"
#include "model/simulator.h"

namespace optpipe {

struct SvgGanttOptions {
  int width = 0;          // px of the whole picture; 0: from the ops (1400 to 20000, see above)
  bool memory = true;     // memory curve under each device row
  bool transfers = true;  // D2H / H2D lanes under each device that has transfers
  std::string title;      // shown on top; default: instance name, makespan, bubble
  bool script = true;     // the inline script for pan, zoom and sticky labels in a browser
};

// `sim` must come from simulating `schedule` on `instance` with record_timeline (and, for the
// memory charts, record_memory). An infeasible simulation renders what ran, and its reason.
std::string render_svg_gantt(const Instance& instance, const Schedule& schedule, const SimResult& sim,
                             const SvgGanttOptions& options = {});

// The smallest step of the form {1, 2, 5} × 10^k with at most `max_ticks` steps in `span`
// (span > 0, max_ticks ≥ 1); 1 for a span ≤ 0.
double nice_tick_step(double span, int max_ticks);

}  // namespace optpipe
