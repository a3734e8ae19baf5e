#include "cli/cmd_solve.h"

#include <atomic>
#include <csignal>
#include <iostream>
#include <memory>

#include "cache/schedule_cache.h"
#include "cli/build_info.h"
#include "model/error.h"
#include "model/instance_io.h"
#include "model/schedule_io.h"
#include "model/simulator.h"
#include "solve/json_reporter.h"
#include "solve/solve_pipeline.h"
#include "solve/text_reporter.h"
#include "viz/gantt_svg.h"

namespace optpipe::cli {
namespace {

std::atomic<bool> g_interrupted{false};

extern "C" void on_sigint(int) { g_interrupted.store(true); }

PipelineOptions pipeline_options(const SolveArgs& a) {
  PipelineOptions o;
  o.time_limit = a.time_limit;
  o.node_limit = a.node_limit;
  o.gap = a.gap;
  o.threads = a.threads;
  o.local_search = a.local_search;
  o.lns = a.lns;
  o.transposition = !a.no_transposition;
  o.stage_relaxation = !a.no_stage_relaxation;
  const std::optional<BoundsMode> bounds = parse_bounds_mode(a.bounds);
  if (!bounds) throw InputError("--bounds must be cpu, tbb, gpu or auto, not '" + a.bounds + "'");
  o.bounds = *bounds;
  o.batch_size = a.batch_size;
  o.stop = &g_interrupted;
  // The schedule cache: $OPTPIPE_CACHE or the default path ("" there: off, or no home).
  if (!a.no_cache) o.cache_file = a.cache.empty() ? cache::default_cache_path() : a.cache;
  o.build = version_string();
  return o;
}

// Writes what the result holds: the schedule (or, for a proven infeasible instance, an empty
// one saying why) and its chart. Returns what was written.
WrittenFiles write_outputs(const SolveArgs& a, const Instance& inst, const SolveResult& res, SimResult& sim) {
  WrittenFiles files;
  if (res.schedule) {
    sim = simulate(inst, *res.schedule);
    if (!a.output.empty()) save_schedule(*res.schedule, a.output), files.schedule = a.output;
    if (!a.svg.empty()) write_text_file(a.svg, render_svg_gantt(inst, *res.schedule, sim)), files.svg = a.svg;
  } else if (!a.output.empty() && res.status == SolveResult::Status::kInfeasible) {
    Schedule none;
    none.instance = inst.name;
    none.devices.assign(inst.num_devices(), {});
    none.status = "infeasible";
    none.solver = "optpipe solve: " + res.reason;
    save_schedule(none, a.output);
    files.schedule = a.output;
  }
  return files;
}

}  // namespace

int run_solve(const SolveArgs& a) {
  const PipelineOptions options = pipeline_options(a);
  std::vector<std::string> warnings;
  const Instance inst = load_instance(a.instance, &warnings);
  std::unique_ptr<SolveReporter> reporter;
  const ReportOptions ro{a.quiet, a.verbose};
  if (a.log_format == "json") {
    reporter = std::make_unique<JsonSolveReporter>(std::cout, ro);
  } else {
    reporter = std::make_unique<TextSolveReporter>(std::cout, ro);
  }
  for (const auto& w : warnings) reporter->on_warning(w);

  g_interrupted.store(false);
  auto previous = std::signal(SIGINT, on_sigint);
  PipelineResult r;
  try {
    r = solve_pipeline(inst, options, *reporter);
  } catch (...) {
    std::signal(SIGINT, previous);
    throw;
  }
  std::signal(SIGINT, previous);

  // The result, always written when there is one (also after Ctrl-C or a limit).
  SimResult sim;
  const WrittenFiles files = write_outputs(a, inst, r.result, sim);
  reporter->done(inst, r, sim, files);
  if (r.result.status == SolveResult::Status::kInfeasible || !r.result.schedule) return 1;
  return 0;
}

}  // namespace optpipe::cli
