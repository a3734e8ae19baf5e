// Solves every shipped instance at 1 thread and at all hardware threads, as optpipe solve does
// (the same library call, solve/solve_pipeline.h, without the cache), and prints a table: instance, ops, best heuristic, warm
// start time, solver makespan, bound, gap, time to best, time to proof, nodes, nodes/s. Not a
// Google Benchmark: each solve runs once, under a time limit.
//
//   ./build/bench/solver_table [--time-limit S] [--threads N] [--no-transposition] [instances/*.json ...]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "model/instance_io.h"
#include "solve/solve_pipeline.h"

using namespace optpipe;

int main(int argc, char** argv) {
  double time_limit = 10;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::string> files;
  bool transposition = true;
  BoundsMode bounds = BoundsMode::kCpu;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--time-limit" && i + 1 < argc) {
      time_limit = std::atof(argv[++i]);
    } else if (a == "--threads" && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else if (a == "--bounds" && i + 1 < argc) {
      const std::string b = argv[++i];
      const std::optional<BoundsMode> mode = parse_bounds_mode(b);
      if (!mode) {
        std::fprintf(stderr, "solver_table: --bounds must be cpu, tbb, gpu or auto, not '%s'\n", b.c_str());
        return 2;
      }
      bounds = *mode;
    } else if (a == "--no-transposition") {
      transposition = false;
    } else if (a == "--help" || a == "-h") {
      std::printf("usage: solver_table [--time-limit S] [--threads N] [--bounds cpu|tbb|gpu|auto] [--no-transposition]\n"
                  "                    [INSTANCE.json ...]\n"
                  "Solves each instance (default: the shipped ones) at 1 and N threads, as optpipe solve does\n"
                  "(the same library call, without the cache; the time limit covers the whole solve).\n"
                  "'warm start' is the time before the search: the heuristics, the root's bounds and the local\n"
                  "search (which stops if it reaches them); the search's times are from its start (0 when the\n"
                  "root's bounds proved the warm start optimal); 'bound share' is the share\n"
                  "of the search's thread-time spent computing node bounds.\n");
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "solver_table: unknown option '%s' (see --help)\n", a.c_str());
      return 2;
    } else {
      files.push_back(a);
    }
  }
  if (files.empty()) {
    for (const auto& e : std::filesystem::directory_iterator(OPTPIPE_INSTANCES_DIR)) {
      if (e.path().extension() == ".json") files.push_back(e.path().string());
    }
    std::sort(files.begin(), files.end());
  }
  std::printf("time limit %.0f s per solve\n\n", time_limit);
  std::printf("| instance | ops | best heuristic | warm start | threads | makespan | bound | gap | status | time to best | "
              "time to proof | nodes | nodes/s | bound share |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const std::string& f : files) {
    const Instance inst = load_instance(f);
    const int ops = inst.num_compute_ops();
    std::vector<int> thread_counts{1};
    if (threads > 1) thread_counts.push_back(threads);
    for (int t : thread_counts) {
      // Exactly as optpipe solve does (solve/solve_pipeline.h), without the cache.
      PipelineOptions opt;
      opt.time_limit = time_limit;
      opt.threads = t;
      opt.transposition = transposition;
      opt.bounds = bounds;
      PipelineResult p;
      try {
        p = solve_pipeline(inst, opt);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "solver_table: %s: %s\n", inst.name.c_str(), e.what());
        return 1;
      }
      const SolveResult& r = p.result;
      char hbuf[64];
      if (!p.best_heuristic.empty()) {
        std::snprintf(hbuf, sizeof hbuf, "%s %.2f", p.best_heuristic.c_str(), p.best_heuristic_makespan);
      } else {
        std::snprintf(hbuf, sizeof hbuf, "none fits");
      }
      const double warm_seconds = std::max(0.0, p.seconds - r.stats.seconds);
      const bool proven = r.status == SolveResult::Status::kOptimal || r.status == SolveResult::Status::kInfeasible;
      char proof[32];
      if (proven) {
        std::snprintf(proof, sizeof proof, "%.3f s", r.stats.seconds);
      } else {
        std::snprintf(proof, sizeof proof, "-");
      }
      const double thread_seconds = r.stats.seconds * t;
      std::printf("| %s | %d | %s | %.2f s | %d | %.2f | %.2f | %.2f%% | %s | %.3f s | %s | %lld | %.0f | %.0f%% |\n",
                  inst.name.c_str(), ops, hbuf, warm_seconds, t, r.makespan, r.bound, 100 * r.gap, to_string(r.status),
                  r.stats.seconds_to_best, proof, static_cast<long long>(r.stats.nodes),
                  r.stats.seconds > 0 ? static_cast<double>(r.stats.nodes) / r.stats.seconds : 0.0,
                  thread_seconds > 0 ? 100 * r.stats.bound_seconds / thread_seconds : 0.0);
      std::fflush(stdout);
    }
  }
  return 0;
}
