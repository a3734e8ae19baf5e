#include "cli/cmd_frontier.h"

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cache/schedule_cache.h"
#include "cli/build_info.h"
#include "cli/stop_signal.h"
#include "cli/validators.h"
#include "frontier/frontier.h"
#include "frontier/frontier_report.h"
#include "frontier/memory_limits.h"
#include "model/instance_io.h"
#include "viz/frontier_svg.h"

namespace optpipe::cli {
namespace {

struct FrontierArgs {
  std::string instance, limits, output, svg, format = "text", cache;
  int steps = 8, threads = 0;
  double time_limit = 60;
  bool no_cache = false, quiet = false;
};

frontier::FrontierOptions frontier_options(const FrontierArgs& a, const StopSignalGuard& signals) {
  frontier::FrontierOptions o;
  if (!a.limits.empty()) {
    const frontier::LimitRange range = frontier::parse_limit_range(a.limits);
    o.low = range.low;
    o.high = range.high;
  }
  o.steps = a.steps;
  o.time_limit = a.time_limit;
  o.solve.threads = a.threads;
  o.solve.stop = signals.flag();
  if (!a.no_cache) o.solve.cache_file = a.cache.empty() ? cache::default_cache_path() : a.cache;
  o.solve.build = version_string();
  if (!a.quiet) o.progress = [](const std::string& line) { std::cerr << "optpipe: " << line << "\n"; };
  return o;
}

void run_frontier(const FrontierArgs& a) {
  const StopSignalGuard signals;
  const frontier::FrontierOptions options = frontier_options(a, signals);
  // Refuse an output that cannot be written now, not after the solves.
  if (!a.output.empty()) check_writable(a.output);
  if (!a.svg.empty()) check_writable(a.svg);
  std::vector<std::string> warnings;
  const Instance inst = load_instance(a.instance, &warnings);
  for (const auto& w : warnings) std::cerr << "optpipe: warning: " << w << "\n";

  const frontier::FrontierResult r = frontier::compute_frontier(inst, options);
  const std::string json = frontier::frontier_to_json(r).dump(1) + "\n";
  // The JSON goes to stdout with --format json or -o -; then the notes go to stderr.
  const bool json_out = a.format == "json" || a.output == "-";
  std::ostream& notes = json_out ? std::cerr : std::cout;
  if (json_out) {
    std::cout << json;
  } else {
    std::cout << frontier::frontier_table(r);
  }
  if (!a.output.empty() && a.output != "-") {
    write_text_file(a.output, json);
    notes << "wrote " << a.output << " (" << frontier::kFrontierFormat << ")\n";
  }
  if (!a.svg.empty()) {
    write_text_file(a.svg, render_frontier_svg(frontier::frontier_chart(r)));
    if (a.svg != "-") notes << "wrote " << a.svg << " (SVG chart)\n";
  }
  std::cout.flush();
}

}  // namespace

void add_frontier_command(CLI::App& app) {
  auto args = std::make_shared<FrontierArgs>();
  auto* cmd = app.add_subcommand(
      "frontier",
      "Memory-time frontier: the best makespan and its proven bound at a range of per-GPU memory limits, the "
      "memory floor, and where 1F1B, ZB-H1, ZB-H2 and PipeOffload stop fitting");
  cmd->add_option("INSTANCE", args->instance, "instance file")->required();
  cmd->add_option("--limits", args->limits,
                  "LOW..HIGH per-GPU memory limits with units, e.g. 20GiB..80GiB; an end left out (..80GiB) is "
                  "its default: from the memory floor up to the peak memory of the best schedule without a limit");
  cmd->add_option("--steps", args->steps, "limits in the range, both ends included (default 8)")
      ->check(from_to(1, 1000));
  cmd->add_option("--time-limit", args->time_limit,
                  "seconds for the whole command, split evenly over the solves (default 60)")
      ->check(at_least(0));
  cmd->add_option("-o,--output", args->output, "write the frontier as JSON here (optpipe-frontier/1; - : stdout)");
  cmd->add_option("--format", args->format, "stdout: text (a table, default) or json")
      ->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("--svg", args->svg, "write an SVG chart: makespan and bound against the memory limit");
  cmd->add_option("--threads", args->threads, "worker threads per solve (default: all)")
      ->check(at_least(0));
  cmd->add_option("--cache", args->cache, "schedule cache file (default: as optpipe solve)");
  cmd->add_flag("--no-cache", args->no_cache, "neither read nor write the schedule cache");
  cmd->add_flag("-q,--quiet", args->quiet, "no progress lines on stderr");
  cmd->footer(
      "Every GPU gets the same limit. The memory floor is the least memory at which any schedule exists (proven: "
      "see README.md, \"Memory-time frontier\"); limits below it are reported, not solved. A schedule that fits a "
      "limit fits every larger one, so each solve starts from the schedules of the smaller limits and more memory "
      "never gives a worse makespan. Ctrl-C stops the solve under way and still prints and writes the frontier.\n"
      "Example:\n"
      "  optpipe frontier instances/gpt-8x24-tight.json --limits 7.4GiB..28GiB --steps 6 --time-limit 60 \\\n"
      "      -o frontier.json --svg frontier.svg");
  cmd->callback([args]() {
    run_frontier(*args);
    throw CLI::Success();
  });
}

}  // namespace optpipe::cli
