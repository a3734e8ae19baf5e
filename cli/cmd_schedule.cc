#include "cli/cmd_schedule.h"

#include <unistd.h>

#include <cstddef>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>

#include <spdlog/spdlog.h>

#include "cli/charts.h"
#include "cli/exit_codes.h"
#include "cli/inputs.h"
#include "cli/json_output.h"
#include "cli/report.h"
#include "heuristics/heuristics_json.h"
#include "heuristics/registry.h"
#include "model/error.h"
#include "model/schedule_io.h"
#include "model/validator.h"  // obviously_infeasible
#include "viz/bottleneck.h"

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
  add_format_option(cmd, args.format);
  return cmd;
}

namespace {

// The heuristic asked for, or all of them; progress goes to stderr (with -v a line each, on a
// terminal a counter).
BestResult run_heuristics(const ScheduleArgs& a, const Instance& inst) {
  BestResult best;
  if (a.heuristic != "best") {
    best.results.push_back(run_heuristic(*find_heuristic(a.heuristic), inst));
    best.best = best.results.back().ok() ? 0 : -1;
    return best;
  }
  const bool tty = isatty(STDERR_FILENO) != 0;
  std::size_t done = 0;
  const std::size_t total = all_heuristics().size();
  return run_all_heuristics(inst, !a.sequential, [&](const HeuristicResult& r) {
    ++done;
    if (a.verbose) {
      spdlog::info("[{}/{}] {}: {} in {:.3f} s", done, total, r.name, r.ok() ? "schedule" : "no schedule", r.seconds);
    } else if (tty) {
      std::cerr << "\r  running heuristics: " << done << "/" << total << std::flush;
      if (done == total) std::cerr << "\r" << std::string(40, ' ') << "\r";
    }
  });
}

// With -o, what `solve` writes for an instance that no schedule fits: an empty schedule with
// status infeasible and the reason.
void write_infeasible(const ScheduleArgs& a, const Instance& inst, const std::string& why) {
  if (!a.output.empty()) {
    save_schedule(infeasible_schedule(inst.name, inst.num_devices(), "optpipe schedule: " + why), a.output);
  }
}

// --format json: the files first (a failure to write them is an input error, before any
// output), then the one document, which names what was written.
int schedule_json(const ScheduleArgs& a, const Instance& inst) {
  for (const auto& [flag, path] : {std::pair{"-o", a.output}, std::pair{"--svg", a.svg}}) {
    if (path == "-") {
      throw InputError(std::string(flag) + " - writes to standard output, where --format json writes its report "
                       "(which holds the schedule): give a file, or leave " + flag + " out");
    }
  }
  if (a.gantt) throw InputError("--gantt prints a text chart: it does not go with --format json");
  nlohmann::json report, output = nullptr, svg = nullptr;
  bool fits = false;
  if (const auto why = obviously_infeasible(inst)) {
    write_infeasible(a, inst, *why);
    if (!a.output.empty()) output = a.output;
    report = infeasible_schedule_report_json(*why);
  } else {
    const BestResult best = run_heuristics(a, inst);
    report = schedule_report_json(inst, best);
    if (const HeuristicResult* chosen = best.best_result()) {
      fits = true;
      if (!a.output.empty()) save_schedule(*chosen->schedule, a.output), output = a.output;
      std::ostringstream said;  // "wrote ...": the document says it
      if (!a.svg.empty()) write_svg(said, inst, *chosen->schedule, chosen->sim, a.svg, {}), svg = a.svg;
    }
  }
  nlohmann::json doc = report_header("optpipe-schedule-report/1", inst.name);
  doc["output"] = output;
  doc["svg"] = svg;
  doc.update(report);
  print_json(doc);
  return fits ? kOk : kNegative;
}

}  // namespace

int run_schedule(const ScheduleArgs& a) {
  if (a.verbose) spdlog::set_level(spdlog::level::info);
  const Instance inst = load_instance_reporting(a.instance);
  if (a.format == "json") return schedule_json(a, inst);
  // With -o - the schedule goes to stdout, so the report goes to stderr.
  std::ostream& out = a.output == "-" ? std::cerr : std::cout;
  out << describe_instance(inst) << "\n";
  if (auto why = obviously_infeasible(inst)) {
    // What `solve` says and writes for such an instance: the same status line, the same file.
    out << "status infeasible (" << *why << ")\n";
    write_infeasible(a, inst, *why);
    if (!a.output.empty() && a.output != "-") out << "wrote " << a.output << "\n";
    return kNegative;
  }
  const BestResult best = run_heuristics(a, inst);
  out << "\n" << heuristic_table(inst, best, a.verbose);
  const HeuristicResult* chosen = best.best_result();
  if (!chosen) {
    out << "\nno heuristic found a schedule that fits in memory\n";
    return kNegative;
  }
  out << "\nbest: " << chosen->title << (chosen->detail.empty() ? "" : " (" + chosen->detail + ")") << "\n"
      << summarize(inst, chosen->sim) << explain_bottleneck(inst, chosen->sim);
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
