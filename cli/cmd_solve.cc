#include "cli/cmd_solve.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <thread>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "cli/report.h"
#include "engine/bytes.h"
#include "engine/error.h"
#include "engine/instance_io.h"
#include "engine/schedule_io.h"
#include "engine/search/solver.h"
#include "engine/simulator.h"
#include "heuristics/registry.h"
#include "kernels/cuda_devices.h"
#include "heuristics/warm_starts.h"
#include "viz/gantt_svg.h"

namespace optpipe::cli {
namespace {

std::atomic<bool> g_interrupted{false};

extern "C" void on_sigint(int) { g_interrupted.store(true); }

std::string num(double x, int precision = 3) {
  if (!std::isfinite(x)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", precision, x);
  return buf;
}

nlohmann::json finite_or_null(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); }

}  // namespace

int run_solve(const SolveArgs& a) {
  const bool json = a.log_format == "json";
  std::vector<std::string> warnings;
  const auto started = std::chrono::steady_clock::now();
  if (a.bounds == "gpu") {  // say so before the heuristics run, not after
    const CudaDevices cuda = query_cuda_devices();
    if (cuda.devices.empty()) throw InputError("--bounds gpu: " + cuda.status);
  }
  const Instance inst = load_instance(a.instance, &warnings);
  for (const auto& w : warnings) spdlog::warn("{}", w);
  int ops = 0;
  for (int s = 0; s < inst.num_stages(); ++s) ops += inst.num_compute_types() * inst.microbatches;

  // Warm starts: every heuristic, and the best few improved by local search.
  const BestResult heur = run_all_heuristics(inst);
  WarmStartOptions wo;
  wo.evaluations = a.local_search >= 0 ? a.local_search : local_search_budget(a.time_limit);
  // At most 40% of the time limit, whatever the budget (it binds only on large instances).
  wo.time_limit = std::max(
      0.0, 0.4 * a.time_limit - std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  const WarmStarts warm_starts = build_warm_starts(inst, heur, wo);
  const std::vector<Schedule>& warm = warm_starts.schedules;
  const HeuristicResult* best_heuristic = heur.best_result();

  if (!a.quiet && !json) {
    std::cout << describe_instance(inst) << "\n" << ops << " compute ops\n";
    std::cout << "warm starts:";
    int shown = 0;
    for (const auto& r : heur.results) {
      if (!r.ok()) continue;
      std::cout << (shown++ % 4 == 0 ? "\n  " : "  ") << r.name << " " << num(r.sim.makespan);
    }
    if (shown == 0) std::cout << " none fits";
    std::cout << "\n";
    for (const ImprovedStart& i : warm_starts.improved) {
      std::cout << "local search from " << i.heuristic << ": " << num(i.before) << " -> " << num(i.after) << " ms ("
                << i.evaluations << " simulations, " << num(i.seconds, 2) << " s)\n";
    }
  } else if (!a.quiet && json) {
    nlohmann::json h{{"event", "start"}, {"instance", inst.name}, {"devices", inst.num_devices()},
                     {"stages", inst.num_stages()}, {"microbatches", inst.microbatches}, {"ops", ops}};
    for (const auto& r : heur.results) {
      if (r.ok()) h["warm_starts"][r.name] = r.sim.makespan;
    }
    for (const ImprovedStart& i : warm_starts.improved) {
      h["local_search"].push_back({{"from", i.heuristic}, {"before", i.before}, {"after", i.after},
                                   {"evaluations", i.evaluations}, {"seconds", i.seconds}});
    }
    std::cout << h.dump() << std::endl;
  }

  g_interrupted.store(false);
  auto previous = std::signal(SIGINT, on_sigint);
  SolveOptions opt;
  // The time limit covers everything: heuristics and local search count against it.
  const double prepared = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  opt.time_limit = std::max(0.0, a.time_limit - prepared);
  opt.node_limit = a.node_limit;
  opt.gap = a.gap;
  opt.threads = a.threads;
  opt.transposition = !a.no_transposition;
  opt.lns_time_share = a.lns;
  opt.bounds = a.bounds == "tbb"   ? BoundsMode::kTbb
               : a.bounds == "gpu" ? BoundsMode::kGpu
               : a.bounds == "auto" ? BoundsMode::kAuto
                                    : BoundsMode::kCpu;
  opt.batch_size = a.batch_size;
  opt.stop = &g_interrupted;
  bool header_printed = false;
  opt.on_root_bound = [&](double b) {
    if (a.quiet) return;
    if (json) {
      std::cout << nlohmann::json{{"event", "root"}, {"bound", b}}.dump() << std::endl;
    } else {
      std::cout << "root bound " << num(b) << "\n\n";
    }
  };
  opt.on_lns = [&](double seconds, double before, double after, int improvements) {
    if (a.quiet) return;
    if (json) {
      std::cout << nlohmann::json{{"event", "lns"}, {"seconds", seconds}, {"before", before}, {"after", after},
                                  {"improvements", improvements}}
                       .dump()
                << std::endl;
    } else {
      std::cout << "large neighbourhood search: " << num(before) << " -> " << num(after) << " ms (" << improvements
                << " improvements in " << num(seconds, 2) << " s)\n\n";
    }
  };
  opt.on_progress = [&](const SolveProgress& p) {
    if (a.quiet) return;
    if (json) {
      std::cout << nlohmann::json{{"event", "progress"},      {"seconds", p.seconds},
                                  {"nodes", p.nodes},         {"open", p.open},
                                  {"incumbent", finite_or_null(p.incumbent)},
                                  {"bound", p.bound},         {"gap", finite_or_null(p.gap)},
                                  {"nodes_per_second", p.seconds > 0 ? static_cast<double>(p.nodes) / p.seconds : 0.0}}
                       .dump()
                << std::endl;
      return;
    }
    if (!header_printed) {
      std::printf("%8s %12s %10s %12s %12s %8s %10s\n", "time", "nodes", "open", "incumbent", "bound", "gap",
                  "nodes/s");
      header_printed = true;
    }
    std::printf("%7.1fs %12lld %10lld %12s %12s %7s%% %10.0f\n", p.seconds, static_cast<long long>(p.nodes),
                static_cast<long long>(p.open), num(p.incumbent).c_str(), num(p.bound).c_str(),
                std::isfinite(p.gap) ? num(100 * p.gap, 2).c_str() : "-",
                p.seconds > 0 ? static_cast<double>(p.nodes) / p.seconds : 0.0);
    std::fflush(stdout);
  };
  const SolveResult res = solve(inst, warm, opt);
  std::signal(SIGINT, previous);

  // The result, always written when there is one (also after Ctrl-C or a limit).
  SimResult sim;
  if (res.schedule) {
    sim = simulate(inst, *res.schedule);
    if (!a.output.empty()) save_schedule(*res.schedule, a.output);
    if (!a.svg.empty()) write_text_file(a.svg, render_svg_gantt(inst, *res.schedule, sim));
  } else if (!a.output.empty() && res.status == SolveResult::Status::kInfeasible) {
    Schedule none;
    none.instance = inst.name;
    none.devices.assign(inst.num_devices(), {});
    none.status = "infeasible";
    none.solver = "optpipe solve: " + res.reason;
    save_schedule(none, a.output);
  }
  const double heuristic = best_heuristic ? best_heuristic->sim.makespan : INFINITY;
  if (json) {
    nlohmann::json out{{"event", "done"},
                       {"status", to_string(res.status)},
                       {"makespan", finite_or_null(res.makespan)},
                       {"bound", res.bound},
                       {"gap", finite_or_null(res.gap)},
                       {"root_bound", res.root_bound},
                       {"best_heuristic", best_heuristic ? nlohmann::json(best_heuristic->name) : nlohmann::json(nullptr)},
                       {"best_heuristic_makespan", finite_or_null(heuristic)},
                       {"reason", res.reason},
                       {"seconds", res.stats.seconds},
                       {"seconds_to_best", res.stats.seconds_to_best},
                       {"nodes", res.stats.nodes},
                       {"bound_calls", res.stats.bound_calls},
                       {"pruned_bound", res.stats.pruned_bound},
                       {"pruned_deadlock", res.stats.pruned_deadlock},
                       {"pruned_dominance", res.stats.pruned_dominance},
                       {"pruned_transposition", res.stats.pruned_transposition},
                       {"bounds_backend", res.stats.bounds_backend},
                       {"batches", res.stats.batches},
                       {"bound_seconds", res.stats.bound_seconds}};
    if (res.schedule) out["peak_memory"] = sim.peak_memory, out["bubble"] = sim.bubble;
    if (!a.output.empty()) out["output"] = a.output;
    std::cout << out.dump() << std::endl;
  } else {
    std::cout << "\nstatus " << to_string(res.status) << " (" << res.reason << ")\n";
    if (res.schedule) {
      std::cout << "makespan " << num(res.makespan) << " ms, bound " << num(res.bound) << " ms, gap "
                << num(100 * res.gap, 2) << "%, root bound " << num(res.root_bound) << " ms\n";
      if (best_heuristic) {
        const double gain = heuristic - res.makespan;
        std::cout << "best heuristic " << best_heuristic->name << " " << num(heuristic) << " ms: "
                  << (gain > 1e-9 ? "improved by " + num(gain) + " ms (" + num(100 * gain / heuristic, 2) + "%)"
                                  : std::string("not improved"))
                  << "\n";
      } else {
        std::cout << "no heuristic fits; the solver found the only schedule\n";
      }
      std::cout << summarize(inst, sim);
    }
    std::cout << "search: " << res.stats.nodes << " nodes in " << num(res.stats.seconds, 2) << " s ("
              << num(res.stats.seconds > 0 ? static_cast<double>(res.stats.nodes) / res.stats.seconds : 0, 0) << " nodes/s), best found at "
              << num(res.stats.seconds_to_best, 2) << " s\n";
    if (res.stats.bounds_backend != "cpu") {
      std::cout << "bounds on " << res.stats.bounds_backend << ": " << res.stats.batches << " batches, "
                << res.stats.batched_nodes << " nodes bounded in them\n";
    }
    if (a.verbose) {
      std::cout << "  pruned by bound " << res.stats.pruned_bound << ", by deadlock " << res.stats.pruned_deadlock
                << ", by dominance " << res.stats.pruned_dominance << ", by transposition "
                << res.stats.pruned_transposition << " (" << res.stats.transposition_stored
                << " states kept); bound calls " << res.stats.bound_calls
                << " (critical path best " << res.stats.critical_path_best << ", one-machine best "
                << res.stats.one_machine_best << ", channel best " << res.stats.channel_best << ", memory energy best "
                << res.stats.memory_best << "); incumbent updates " << res.stats.incumbent_updates << "\n";
      const double thread_seconds = res.stats.seconds * res.stats.threads;
      std::cout << "  bounds: " << num(res.stats.bound_seconds, 2) << " thread-s on " << res.stats.bounds_backend << " ("
                << num(thread_seconds > 0 ? 100 * res.stats.bound_seconds / thread_seconds : 0, 0)
                << "% of the search's thread-time)\n";
      if (res.stats.lns_repairs > 0) {
        std::cout << "  large neighbourhood search: " << res.stats.lns_repairs << " repairs, "
                  << res.stats.lns_improvements << " improvements, " << res.stats.lns_nodes << " nodes, "
                  << num(res.stats.lns_seconds, 2) << " s\n";
      }
    }
    if (!a.output.empty()) std::cout << "wrote " << a.output << "\n";
    if (!a.svg.empty() && res.schedule) std::cout << "wrote " << a.svg << "\n";
  }
  if (res.status == SolveResult::Status::kInfeasible || !res.schedule) return 1;
  return 0;
}

}  // namespace optpipe::cli
