// The commands' Gantt charts: a text chart as wide as the terminal (viz/gantt_text.h) and an
// SVG file (viz/gantt_svg.h), each for a simulated schedule.
#pragma once

#include <ostream>
#include <string>

#include "model/instance.h"
#include "model/schedule.h"
#include "model/simulator.h"
#include "viz/gantt_svg.h"

namespace optpipe::cli {

// $COLUMNS when it says more than 40, else 120.
int terminal_width();

// The text Gantt chart `width` columns wide (up to twice that, so that microbatch numbers fit:
// viz/gantt_text.h), with a ruler and a legend.
void print_gantt(std::ostream& out, const Instance& inst, const Schedule& sch, const SimResult& sim, int width);

// Writes the SVG chart to `path` ("-": stdout) and says so on `out` when it went to a file.
void write_svg(std::ostream& out, const Instance& inst, const Schedule& sch, const SimResult& sim,
               const std::string& path, const SvgGanttOptions& o);

}  // namespace optpipe::cli
