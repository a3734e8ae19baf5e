#include "cli/cmd_solve.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <memory>
#include <thread>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "cache/cache_lookup.h"
#include "cache/schedule_cache.h"
#include "cache/signature.h"
#include "cli/build_info.h"
#include "cli/report.h"
#include "model/bytes.h"
#include "model/error.h"
#include "model/instance_io.h"
#include "model/schedule_io.h"
#include "search/solver.h"
#include "model/simulator.h"
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

// Nodes by depth in buckets of 10 decisions, e.g. "0-9 12, 10-19 480, 20-29 9k (deepest 27)";
// "none" without nodes.
std::string depth_histogram(const std::vector<std::int64_t>& by_depth) {
  std::string out;
  for (std::size_t lo = 0; lo < by_depth.size(); lo += 10) {
    std::int64_t n = 0;
    for (std::size_t k = lo; k < std::min(lo + 10, by_depth.size()); ++k) n += by_depth[k];
    if (n == 0) continue;
    const std::string count = n >= 10'000'000 ? std::to_string(n / 1'000'000) + "M"
                              : n >= 10'000   ? std::to_string(n / 1'000) + "k"
                                              : std::to_string(n);
    out += (out.empty() ? "" : ", ") + std::to_string(lo) + "-" + std::to_string(lo + 9) + " " + count;
  }
  if (out.empty()) return "none";
  return out + " (deepest " + std::to_string(by_depth.size() - 1) + ")";
}

// The schedule cache's part of a solve (cache/cache_lookup.h). Never a reason to fail: every
// problem is logged as a warning and the solve goes on without the cache.
struct SolveCache {
  std::unique_ptr<cache::ScheduleCache> store;  // null: off
  cache::Signature sig;
  cache::LookupResult hit;
  std::string path;
};

SolveCache cache_lookup(const SolveArgs& a, const Instance& inst, bool json) {
  SolveCache c;
  if (a.no_cache) return c;
  c.path = a.cache.empty() ? cache::default_cache_path() : a.cache;
  if (c.path.empty()) return c;  // $OPTPIPE_CACHE=off, or no home
  try {
    c.sig = cache::signature(inst);
    c.store = std::make_unique<cache::ScheduleCache>(c.path);
    c.hit = cache::lookup(*c.store, inst, c.sig);
  } catch (const std::exception& e) {  // e.g. out of memory: still not a reason to fail
    c.hit = cache::LookupResult{};
    c.hit.kind = cache::LookupResult::Kind::kUnavailable;
    c.hit.message = "off for this run (internal error)";
    c.hit.warnings.push_back(c.path + ": " + e.what());
  }
  for (const auto& w : c.hit.warnings) spdlog::warn("cache: {}", w);
  if (c.hit.kind == cache::LookupResult::Kind::kUnavailable) c.store.reset();
  if (a.quiet) return c;
  if (json) {
    nlohmann::json ev{{"event", "cache"}, {"result", cache::to_string(c.hit.kind)}, {"file", c.path},
                      {"message", c.hit.message}};
    if (c.hit.schedule) {
      ev["makespan"] = c.hit.makespan;
      ev["proven_optimal"] = c.hit.proven_optimal;
      ev["repaired"] = c.hit.repaired;
      ev["key"] = c.hit.exact_key;
    }
    std::cout << ev.dump() << std::endl;
  } else {
    std::cout << "cache: " << c.hit.message << "; file " << c.path << "\n";
  }
  return c;
}

// Stores a solve's result (better-only) and reports the outcome.
void cache_store(SolveCache& c, const SolveArgs& a, const Instance& inst, const SolveResult& res, double seconds,
                 bool json) {
  if (!c.store || !res.schedule) return;
  cache::StoreOutcome outcome = cache::StoreOutcome::kInserted;
  cache::CacheStatus st;
  try {
    st = cache::store_result(*c.store, inst, c.sig, *res.schedule, res.makespan, res.bound, to_string(res.status),
                             version_string(), seconds, &outcome);
  } catch (const std::exception& e) {
    st = cache::CacheStatus::error(c.path + ": " + e.what());
  }
  if (!st.ok) {
    spdlog::warn("cache: not stored: {}", st.message);
    return;
  }
  if (a.quiet) return;
  if (json) {
    std::cout << nlohmann::json{{"event", "cache_store"}, {"file", c.path}, {"outcome", cache::to_string(outcome)}}.dump()
              << std::endl;
  } else if (a.verbose) {
    std::cout << "cache: " << cache::to_string(outcome) << " in " << c.path << "\n";
  }
}

// An exact, proven optimal cache hit: write the outputs as a solve would, without searching.
int answer_from_cache(const SolveArgs& a, const Instance& inst, const SolveCache& c, bool json) {
  Schedule sch = *c.hit.schedule;
  sch.status = "optimal";
  sch.bound = c.hit.makespan;
  sch.gap = 0.0;
  const SimResult sim = simulate(inst, sch);
  if (!a.output.empty()) save_schedule(sch, a.output);
  if (!a.svg.empty()) write_text_file(a.svg, render_svg_gantt(inst, sch, sim));
  if (json) {
    nlohmann::json out{{"event", "done"},     {"status", "optimal"},        {"makespan", c.hit.makespan},
                       {"bound", c.hit.makespan}, {"gap", 0.0},           {"reason", "cache: exact hit, proven optimal"},
                       {"seconds", 0.0},      {"nodes", 0},                 {"from_cache", true},
                       {"cache_key", c.hit.exact_key}, {"peak_memory", sim.peak_memory}, {"bubble", sim.bubble}};
    if (!a.output.empty()) out["output"] = a.output;
    std::cout << out.dump() << std::endl;
    return 0;
  }
  if (!a.quiet) std::cout << describe_instance(inst) << "\n";
  std::cout << "\nstatus optimal (cache: exact hit, proven optimal; no search)\n";
  std::cout << "makespan " << num(c.hit.makespan) << " ms, bound " << num(c.hit.makespan) << " ms, gap 0.00%\n";
  std::cout << summarize(inst, sim);
  std::cout << "search: none (answered from the cache, entry " << c.hit.exact_key.substr(0, 12) << ")\n";
  if (!a.output.empty()) std::cout << "wrote " << a.output << "\n";
  if (!a.svg.empty()) std::cout << "wrote " << a.svg << "\n";
  return 0;
}

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

  // The schedule cache first: an exact hit proven optimal is the answer; any other hit that
  // fits becomes one more warm start.
  SolveCache cached = cache_lookup(a, inst, json);
  if (cached.hit.kind == cache::LookupResult::Kind::kExact && cached.hit.proven_optimal && cached.hit.schedule) {
    return answer_from_cache(a, inst, cached, json);
  }
  int ops = 0;
  for (int s = 0; s < inst.num_stages(); ++s) ops += inst.num_compute_types() * inst.microbatches;

  // Warm starts: every heuristic, and the best few improved by local search, which stops at
  // the root's bounds: the cheap ones first, the single-stage relaxation (and a start from its
  // order) only if a quick local search does not reach them (heuristics/warm_starts.h). The
  // bound goes to the search as known_bound, with the cache's exact hit's.
  const BestResult heur = run_all_heuristics(inst);
  WarmStartOptions wo;
  wo.evaluations = a.local_search >= 0 ? a.local_search : local_search_budget(a.time_limit);
  wo.target = cached.hit.kind == cache::LookupResult::Kind::kExact ? cached.hit.bound : 0.0;
  wo.guide_name = "relaxed order";
  // At most 40% of the time limit, whatever the budget (it binds only on large instances).
  wo.time_limit = std::max(
      0.0, 0.4 * a.time_limit - std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  RootBound relaxed;  // the thorough root bound, if computed: the search reuses its relaxation
  const RootBoundFn root_bound = [&](double incumbent, bool thorough) {
    SolveOptions ro;
    ro.time_limit =
        std::max(0.0, a.time_limit - std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    ro.stage_relaxation = thorough && !a.no_stage_relaxation;
    if (cached.hit.schedule) incumbent = std::min(incumbent, cached.hit.makespan);
    const RootBound r = root_lower_bound(inst, incumbent, ro);
    if (thorough) relaxed = r;
    return GuidedBound{r.bound, r.device, r.order};
  };
  const BoundedWarmStarts bounded = build_warm_starts(inst, heur, wo, root_bound);
  const WarmStarts& warm_starts = bounded.starts;
  const double early_bound = bounded.bound, early_seconds = bounded.bound_seconds;
  std::vector<Schedule> warm = warm_starts.schedules;
  if (cached.hit.schedule) warm.push_back(*cached.hit.schedule);  // the cache's hit, re-simulated (and repaired)
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
    if (early_bound > 0) {
      std::cout << "lower bound " << num(early_bound) << " ms (the root's bounds"
                << (bounded.thorough ? " with the single-stage relaxation, " : ", ") << num(early_seconds, 2) << " s)"
                << (warm_starts.reached_target ? ": a warm start meets it" : "") << "\n";
    }
    for (std::size_t k = 0; k < warm_starts.improved.size(); ++k) {
      const ImprovedStart& i = warm_starts.improved[k];
      std::cout << (static_cast<int>(k) < bounded.quick_runs ? "quick local search from " : "local search from ")
                << i.heuristic << ": " << num(i.before) << " -> " << num(i.after) << " ms (" << i.evaluations
                << " simulations, " << num(i.seconds, 2) << " s)\n";
    }
  } else if (!a.quiet && json) {
    nlohmann::json h{{"event", "start"}, {"instance", inst.name}, {"devices", inst.num_devices()},
                     {"stages", inst.num_stages()}, {"microbatches", inst.microbatches}, {"ops", ops}};
    for (const auto& r : heur.results) {
      if (r.ok()) h["warm_starts"][r.name] = r.sim.makespan;
    }
    for (std::size_t k = 0; k < warm_starts.improved.size(); ++k) {
      const ImprovedStart& i = warm_starts.improved[k];
      h["local_search"].push_back({{"from", i.heuristic}, {"before", i.before}, {"after", i.after},
                                   {"evaluations", i.evaluations}, {"seconds", i.seconds},
                                   {"quick", static_cast<int>(k) < bounded.quick_runs}});
    }
    if (early_bound > 0) {
      h["lower_bound"] = {{"bound", early_bound}, {"seconds", early_seconds}, {"relaxation", bounded.thorough}};
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
  opt.stage_relaxation = !a.no_stage_relaxation;
  opt.lns_time_share = a.lns;
  // An exact hit's bound was proven on this very instance by an earlier run.
  if (cached.hit.kind == cache::LookupResult::Kind::kExact) opt.known_bound = cached.hit.bound;
  // ... and so was the root bound before the local search.
  opt.known_bound = std::max(opt.known_bound, early_bound);
  opt.root_relaxation = &relaxed;
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
  cache_store(cached, a, inst, res, std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), json);
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
                       {"bounds_backend", to_string(res.stats.bounds_backend)},
                       {"batches", res.stats.batches},
                       {"bound_seconds", res.stats.bound_seconds}};
    if (res.schedule) out["peak_memory"] = sim.peak_memory, out["bubble"] = sim.bubble;
    if (a.verbose) out["nodes_by_depth"] = res.stats.nodes_by_depth;
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
    if (res.stats.bounds_backend != BoundsMode::kCpu) {
      std::cout << "bounds on " << to_string(res.stats.bounds_backend) << ": " << res.stats.batches << " batches, "
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
      std::cout << "  nodes by depth (decisions from the root): " << depth_histogram(res.stats.nodes_by_depth) << "\n";
      if (res.stats.single_stage_nodes > 0) {
        std::cout << "  single-stage relaxation at the root: bound "
                  << (res.stats.single_stage_bound > 0 ? num(res.stats.single_stage_bound) : std::string("none")) << " ("
                  << res.stats.single_stage_nodes << " nodes, " << num(res.stats.single_stage_seconds, 3) << " s)\n";
        std::cout << "  relaxation at nodes: " << res.stats.relaxation_calls << " calls ("
                  << res.stats.spec_rule_calls << " of them the first stage's under the spec's start rules; "
                  << res.stats.relaxation_unfinished << " unfinished), " << res.stats.relaxation_hits
                  << " memo hits, " << res.stats.pruned_relaxation << " nodes cut; with the node's heads: "
                  << res.stats.node_relaxation_calls << " calls, " << res.stats.node_relaxation_hits << " memo answers\n";
      }
      const double thread_seconds = res.stats.seconds * res.stats.threads;
      std::cout << "  bounds: " << num(res.stats.bound_seconds, 2) << " thread-s on " << to_string(res.stats.bounds_backend) << " ("
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
