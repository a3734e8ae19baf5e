#include "cli/cmd_schedule.h"

#include <unistd.h>

#include <cstddef>
#include <iostream>
#include <string>

#include <spdlog/spdlog.h>

#include "cli/charts.h"
#include "cli/exit_codes.h"
#include "cli/inputs.h"
#include "cli/report.h"
#include "model/schedule_io.h"
#include "model/validator.h"  // obviously_infeasible
#include "heuristics/registry.h"

namespace optpipe::cli {

CLI::App* add_schedule_command(CLI::App& app, ScheduleArgs& args) {
  auto* cmd = app.add_subcommand("schedule", "Build a schedule with a baseline heuristic, or the best of them all");
  cmd->add_option("INSTANCE", args.instance, "instance file (optpipe-instance/1)")->required();
  cmd->add_option("-H,--heuristic", args.heuristic, "heuristic name, or best (default) to run them all")
      ->check([](const std::string& name) -> std::string {
        if (name == "best" || find_heuristic(name)) return {};
        return "unknown heuristic \"" + name + "\" (choose best or one of: " + heuristic_names() + ")";
      });
  cmd->add_option("-o,--output", args.output, "write the schedule here (optpipe-schedule/1 JSON; - for stdout)");
  cmd->add_option("--svg", args.svg, "write an SVG Gantt chart of the schedule here");
  cmd->add_flag("--gantt", args.gantt, "print a text Gantt chart");
  cmd->add_flag("-v,--verbose", args.verbose, "per-heuristic progress, time and choices");
  cmd->add_flag("--sequential", args.sequential, "run the heuristics one after another (default: in parallel)");
  return cmd;
}

int run_schedule(const ScheduleArgs& a) {
  // With -o - the schedule goes to stdout, so the report goes to stderr.
  std::ostream& out = a.output == "-" ? std::cerr : std::cout;
  if (a.verbose) spdlog::set_level(spdlog::level::info);
  const Instance inst = load_instance_reporting(a.instance);
  out << describe_instance(inst) << "\n";
  if (auto why = obviously_infeasible(inst)) {
    // What `solve` says and writes for such an instance: the same status line, the same file.
    out << "status infeasible (" << *why << ")\n";
    if (!a.output.empty()) {
      save_schedule(infeasible_schedule(inst.name, inst.num_devices(), "optpipe schedule: " + *why), a.output);
      if (a.output != "-") out << "wrote " << a.output << "\n";
    }
    return kNegative;
  }
  BestResult best;
  if (a.heuristic == "best") {
    const bool tty = isatty(STDERR_FILENO) != 0;
    std::size_t done = 0;
    const std::size_t total = all_heuristics().size();
    best = run_all_heuristics(inst, !a.sequential, [&](const HeuristicResult& r) {
      ++done;
      if (a.verbose) {
        spdlog::info("[{}/{}] {}: {} in {:.3f} s", done, total, r.name, r.ok() ? "schedule" : "no schedule", r.seconds);
      } else if (tty) {
        std::cerr << "\r  running heuristics: " << done << "/" << total << std::flush;
        if (done == total) std::cerr << "\r" << std::string(40, ' ') << "\r";
      }
    });
  } else {
    const Heuristic* h = find_heuristic(a.heuristic);
    best.results.push_back(run_heuristic(*h, inst));
    best.best = best.results.back().ok() ? 0 : -1;
  }
  out << "\n" << heuristic_table(inst, best, a.verbose);
  const HeuristicResult* chosen = best.best_result();
  if (!chosen) {
    out << "\nno heuristic found a schedule that fits in memory\n";
    return kNegative;
  }
  out << "\nbest: " << chosen->title << (chosen->detail.empty() ? "" : " (" + chosen->detail + ")") << "\n"
      << summarize(inst, chosen->sim);
  if (a.gantt) print_gantt(out, inst, *chosen->schedule, chosen->sim, terminal_width());
  out << "\n";
  if (!a.output.empty()) {
    save_schedule(*chosen->schedule, a.output);
    if (a.output != "-") out << "wrote " << a.output << "\n";
  }
  if (!a.svg.empty()) write_svg(out, inst, *chosen->schedule, chosen->sim, a.svg, {});
  if (a.output.empty() && a.svg.empty()) out << "(use -o FILE.json to save the schedule, --svg FILE.svg for a chart)\n";
  return kOk;
}

}  // namespace optpipe::cli
