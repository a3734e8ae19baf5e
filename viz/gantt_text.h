// A text Gantt chart of a simulated schedule, for the terminal and for tests.
//
// One row per device, one column per `quantum` ms. An op covering columns [a, b) (rounded start
// and end) is written as its type letter, then its microbatch number in decimal when the whole
// number fits in the op's columns (else no digit at all: a number shown is never cut), then '-'
// to its end; idle columns are '.'. On a device with several stages the letters of its first
// stage are upper case (F, B, W) and of its later stages lower case (f, b, w); digits are only
// ever microbatch numbers (`F11` is microbatch 11; there are no letter digits). Under a device
// with transfers come its D2H lane ('>' + microbatch) and H2D lane ('<' + microbatch). Example
// (quantum 0.5 ms):
//   d0  |F0F1....B0--W0B1--W1
//   d0> |..>0--..............
//   d1  |..F0F1B0--W0B1--W1..
// When the columns are fitted to `width` (quantum 0), the chart is widened until every op with
// room for its letter and a digit at `width` columns also has room for its whole number
// (two-digit microbatches take three columns), if that takes at most `max_widen` times `width`
// columns; else it keeps `width` columns (and leaves out the numbers that do not fit).
#pragma once

#include <string>

#include "model/instance.h"
#include "model/schedule.h"
#include "model/simulator.h"

namespace optpipe {

struct TextGanttOptions {
  double quantum = 0;      // ms per column; 0: fit `width` columns (widened for labels, see above)
  int width = 100;         // used when quantum == 0
  double max_widen = 2.0;  // fitted charts: at most this many times `width` columns
  bool transfers = true;   // D2H/H2D lanes under devices that offload
  bool ruler = false;      // a time ruler line on top
};

std::string render_text_gantt(const Instance& instance, const Schedule& schedule, const SimResult& sim,
                              const TextGanttOptions& options = {});

}  // namespace optpipe
