#include "cli/cmd_solve.h"

#include <atomic>
#include <iostream>
#include <memory>

#include "cache/schedule_cache.h"
#include "cli/build_info.h"
#include "cli/exit_codes.h"
#include "cli/stop_signal.h"
#include "cli/validators.h"
#include "model/bytes.h"
#include "model/error.h"
#include "model/instance_io.h"
#include "model/schedule_io.h"
#include "model/simulator.h"
#include "model/validator.h"
#include "solve/json_reporter.h"
#include "solve/solve_pipeline.h"
#include "solve/text_reporter.h"
#include "viz/gantt_svg.h"

namespace optpipe::cli {
namespace {

PipelineOptions pipeline_options(const SolveArgs& a, const std::atomic<bool>* stop) {
  PipelineOptions o;
  o.time_limit = a.time_limit;
  o.node_limit = a.node_limit;
  o.gap = a.gap;
  o.threads = a.threads;
  o.local_search = a.local_search;
  o.lns = a.lns;
  o.transposition = !a.no_transposition;
  o.stage_relaxation = !a.no_stage_relaxation;
  o.device_relaxation = !a.no_device_relaxation;
  o.probing = !a.no_probing;
  o.two_device_nodes = a.two_devices;
  const std::optional<BoundsMode> bounds = parse_bounds_mode(a.bounds);
  if (!bounds) throw InputError("--bounds must be cpu, tbb, gpu or auto, not '" + a.bounds + "'");
  o.bounds = *bounds;
  o.batch_size = a.batch_size;
  std::string why;
  const std::optional<double> pool = parse_byte_flag(a.pool_memory, &why);
  if (!pool || !(*pool > 0)) throw InputError("--pool-memory: " + (why.empty() ? "must be more than 0 bytes" : why));
  o.pool_memory_bytes = *pool;
  o.stop = stop;
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
    save_schedule(infeasible_schedule(inst.name, inst.num_devices(), "optpipe solve: " + res.reason), a.output);
    files.schedule = a.output;
  }
  return files;
}

// The --warm-start files: each must be a schedule of this instance that runs (the spec's
// simulator), else the solve stops before it starts, naming the file and what is wrong.
std::vector<Schedule> load_warm_starts(const std::vector<std::string>& files, const Instance& inst) {
  std::vector<Schedule> starts;
  for (const std::string& f : files) {
    Schedule sch = load_schedule(f);
    const auto problems = check_structure(inst, sch);
    if (!problems.empty()) {
      throw InputError("--warm-start " + f + ": not a schedule of this instance: " + problems.front().message);
    }
    const SimResult sim = simulate(inst, sch);
    if (!sim.feasible) throw InputError("--warm-start " + f + ": the schedule does not run: " + sim.reason);
    sch.solver = f;  // what -v and the JSON log name as its origin
    starts.push_back(std::move(sch));
  }
  return starts;
}

}  // namespace

CLI::App* add_solve_command(CLI::App& app, SolveArgs& args) {
  auto* cmd = app.add_subcommand("solve", "Find the optimal schedule (branch-and-bound), or the best within the limits");
  cmd->add_option("INSTANCE", args.instance, "instance file")->required();
  cmd->add_option("-o,--output", args.output, "write the schedule here (with status, bound and gap)");
  cmd->add_option("--svg", args.svg, "write an SVG Gantt chart of the schedule here");
  cmd->add_option("--time-limit", args.time_limit,
                  "seconds for the whole run, heuristics and local search included (default 60)")
      ->check(at_least(0));
  cmd->add_option("--node-limit", args.node_limit, "stop after this many nodes")->check(at_least(0));
  cmd->add_option("--gap", args.gap, "stop at this relative gap, e.g. 0.01 for 1% (default 0: prove optimality)")
      ->check(from_to(0, 1));
  cmd->add_option("--threads", args.threads, "threads for the whole solve: heuristics, local search, bounds, tree (default: all)")->check(at_least(0));
  cmd->add_option("--log-format", args.log_format, "text (default) or json (one object per line)")
      ->check(CLI::IsMember({"text", "json"}));
  cmd->add_flag("-q,--quiet", args.quiet, "no header and no progress lines");
  cmd->add_flag("-v,--verbose", args.verbose, "search statistics (prunes, bound calls)");
  cmd->add_option("--local-search", args.local_search,
                  "simulations of local search on each of the 3 best warm starts (default: 2000 per second of the time "
                  "limit, 1000 to 200000; 0: none); it stops at 40% of the time limit in any case")
      ->check(at_least(0));
  cmd->add_option("--lns", args.lns,
                  "share of the time limit for large neighbourhood search before the tree (default 0, e.g. 0.1)")
      ->check(from_to(0, 1));
  cmd->add_option("--bounds", args.bounds,
                  "where node bounds are computed: cpu (default: one node at a time, depth-first dives), tbb "
                  "(batches on the CPU), gpu (batches on a CUDA device), auto (gpu if present, else tbb)")
      ->check(CLI::IsMember({"cpu", "tbb", "gpu", "auto"}));
  cmd->add_option("--batch-size", args.batch_size, "batch modes: most open nodes per batch (default: adaptive, up to 1024)")
      ->check(from_to(0, 1 << 20));
  cmd->add_option("--pool-memory", args.pool_memory,
                  "memory for the open nodes, e.g. 512MiB or 4GiB (default 1GiB); beyond it the search goes on "
                  "depth-first and says so");
  cmd->add_flag("--no-transposition", args.no_transposition,
                "do not cut nodes whose state another node dominates (for comparisons)");
  cmd->add_flag("--no-stage-relaxation", args.no_stage_relaxation,
                "do not bound with the single-stage relaxation, at the root or at the nodes (for comparisons)");
  cmd->add_flag("--no-device-relaxation", args.no_device_relaxation,
                "do not bound with the device relaxation of V and loop placements at the root (for comparisons)");
  cmd->add_flag("--no-probing", args.no_probing,
                "small V and loop instances: do not search below targets just above the bound before the tree (for comparisons)");
  cmd->add_option("--two-devices", args.two_devices,
                  "small V and loop instances: before probing, bound with two devices at once (the two-device "
                  "relaxation) within this many search nodes, e.g. 100000 (default 0: off; it lifts some bounds to "
                  "the optimum and costs time on others, bench/README.md)")
      ->check(from_to(0, 1000000000));
  cmd->add_option("--cache", args.cache, "schedule cache file (default: $OPTPIPE_CACHE, else $XDG_CACHE_HOME/optpipe/schedules.sqlite)");
  cmd->add_flag("--no-cache", args.no_cache, "neither read nor write the schedule cache");
  cmd->add_option("--warm-start", args.warm_starts,
                  "schedule file to start from, e.g. an earlier solve's -o or another solver's (may be given more than "
                  "once): the search starts with the best of these and the heuristics as its incumbent");
  cmd->footer("Ctrl-C stops the search and still writes the best schedule with its bound.");
  return cmd;
}

int run_solve(const SolveArgs& a) {
  // Ctrl-C and SIGTERM stop every phase from the start (the heuristics, the local search, the
  // search); the best schedule found so far is still written.
  const StopSignalGuard signals;
  const PipelineOptions options = pipeline_options(a, signals.flag());
  // Refuse an output that cannot be written now, not after a long solve.
  if (!a.output.empty()) check_writable(a.output);
  if (!a.svg.empty()) check_writable(a.svg);
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
  PipelineOptions with_starts = options;
  with_starts.warm_starts = load_warm_starts(a.warm_starts, inst);
  const PipelineResult r = solve_pipeline(inst, with_starts, *reporter);

  // The result, always written when there is one (also after Ctrl-C or a limit).
  SimResult sim;
  WrittenFiles files = write_outputs(a, inst, r.result, sim);
  files.cache = options.cache_file;
  reporter->done(inst, r, sim, files);
  if (r.result.status == SolveResult::Status::kInfeasible || !r.result.schedule) return kNegative;
  return kOk;
}

}  // namespace optpipe::cli
