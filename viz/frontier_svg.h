// An SVG chart of a memory-time frontier (frontier/frontier.h): makespan and its proven lower
// bound against the per-GPU memory limit. A self-contained SVG 1.1 picture (no scripts, no
// external resources; text in sans-serif, XML-escaped).
//
//   title          chart.title, and chart.subtitle in small grey print under it
//   plot           x: memory limit per GPU in GiB; y: makespan in ms; round tick steps
//                  (nice_tick_step, viz/gantt_svg.h) with light grid lines, axis titles with units
//   memory floor   the region left of chart.floor shaded grey, a red dashed vertical line
//                  labelled chart.floor_label ("memory floor 7.40 GiB")
//   best makespan  blue: a marker at each limit with a schedule; the line is the best makespan
//                  known at every limit -- of the grid's schedules and the classic ones inside the
//                  grid's range, each from its limit on (a schedule that fits runs with more
//                  memory too) -- so it steps down where a schedule starts to fit; hollow
//                  markers: points that carried a lower limit's schedule
//   bound          grey, dashed: the proven lower bound at each limit (small squares); between two
//                  limits the larger one's (the optimum never rises with memory), as steps
//   classics       one diamond per classic schedule at (its peak memory, its makespan), each in its
//                  own colour and labelled "1F1B" next to it; the legend lists their peaks
//   legend         under the plot
// Every marker has a tooltip with its numbers.
#pragma once

#include <limits>
#include <string>
#include <vector>

namespace optpipe {

struct FrontierChartPoint {
  double limit = 0;                                           // bytes
  double makespan = std::numeric_limits<double>::quiet_NaN();  // ms; NaN: no schedule at this limit
  double bound = std::numeric_limits<double>::quiet_NaN();     // ms; NaN or 0: none
  bool carried = false;  // the schedule is a lower limit's (run with memory capped there)
};

struct FrontierChartMark {
  std::string label;  // "1F1B"
  double peak = 0;    // bytes
  double makespan = 0;  // ms
};

struct FrontierChart {
  std::string title, subtitle;
  std::vector<FrontierChartPoint> points;  // ascending limits
  std::vector<FrontierChartMark> marks;    // the classic schedules that apply
  double floor = 0;                        // bytes; 0: not drawn
  std::string floor_label;
};

struct FrontierSvgOptions {
  int width = 960;   // px
  int height = 600;  // px
};

std::string render_frontier_svg(const FrontierChart& chart, const FrontierSvgOptions& options = {});

}  // namespace optpipe
