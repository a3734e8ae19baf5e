// `optpipe render`: draws an SVG Gantt chart of a schedule (viz/gantt_svg.h): the ops of every
// device, the offload/reload lanes and the memory curves against the limits.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace optpipe::cli {

struct RenderArgs {
  std::string instance, schedule, output, title;
  int width = 0;  // 0: from the ops (SvgGanttOptions::width)
  bool no_memory = false, no_transfers = false, no_script = false;
};

// Registers the `render` subcommand on `app` with its flags bound to `args`, which must outlive
// the parse; main runs run_render when the returned subcommand was given.
CLI::App* add_render_command(CLI::App& app, RenderArgs& args);

// kOk, or kNegative when the schedule breaks a rule of the lists or deadlocks (the chart then
// shows what ran); bad input throws InputError.
int run_render(const RenderArgs& args);

}  // namespace optpipe::cli
