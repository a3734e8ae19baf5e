// The solver at scale (issue 21): solves each instance of the benchmark family
// (instances/generated/bench-*.json, written by instances/generate.sh) as optpipe solve does
// (solve/solve_pipeline.h, without the cache) and prints one markdown row each: the best
// heuristic, the incumbent, the bound, the gap, the first time the gap was at most 2% and 1%
// (from the solve's trace, solve/solve_trace.h; '-': never), and what produced the final
// incumbent and the final bound. Not a Google Benchmark: each solve runs once.
//
//   ./build/bench/scale_table [--time-limit S] [--threads N] [--local-search N] [INSTANCE.json ...]
//
// The time limit is 30 s below 8192 compute ops (16 x 64) and 60 s from there on (32 x 128), the
// issue's targets, unless --time-limit gives one for all. --local-search N fixes the local
// search's budget (then with --time-limit large the result does not depend on the machine or the
// thread count: the determinism check).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "model/instance_io.h"
#include "solve/solve_pipeline.h"

using namespace optpipe;

namespace {

struct Args {
  double time_limit = -1;  // < 0: by size
  int threads = 0;
  long long local_search = -1;
  std::vector<std::string> files;
};

bool parse(int argc, char** argv, Args& a) {
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    if (s == "--time-limit" && i + 1 < argc) {
      a.time_limit = std::atof(argv[++i]);
    } else if (s == "--threads" && i + 1 < argc) {
      a.threads = std::atoi(argv[++i]);
    } else if (s == "--local-search" && i + 1 < argc) {
      a.local_search = std::atoll(argv[++i]);
    } else if (s == "--help" || s == "-h") {
      std::printf("usage: scale_table [--time-limit S] [--threads N] [--local-search N] [INSTANCE.json ...]\n"
                  "Solves each instance (default: instances/generated/bench-*.json) as optpipe solve does and prints\n"
                  "incumbent, bound, gap, the first time the gap was <= 2%% and <= 1%%, and what produced the final\n"
                  "incumbent and bound. Time limit: 30 s below 8192 compute ops, 60 s from there on.\n");
      std::exit(0);
    } else if (!s.empty() && s[0] == '-') {
      std::fprintf(stderr, "scale_table: unknown option '%s' (see --help)\n", s.c_str());
      return false;
    } else {
      a.files.push_back(s);
    }
  }
  if (a.files.empty()) {
    for (const auto& e : std::filesystem::directory_iterator(std::string(OPTPIPE_INSTANCES_DIR) + "/generated")) {
      const std::string name = e.path().filename().string();
      if (name.rfind("bench-", 0) == 0 && e.path().extension() == ".json") a.files.push_back(e.path().string());
    }
    std::sort(a.files.begin(), a.files.end());
  }
  return true;
}

std::string seconds_text(double s) {
  if (s < 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", s);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!parse(argc, argv, a)) return 2;
  std::printf("| instance | ops | limit | best heuristic | incumbent | bound | gap | to 2%% | to 1%% | incumbent from | "
              "bound from |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const std::string& f : a.files) {
    const Instance inst = load_instance(f);
    const int ops = inst.num_compute_ops();
    PipelineOptions opt;
    opt.time_limit = a.time_limit > 0 ? a.time_limit : (ops < 8192 ? 30.0 : 60.0);
    opt.threads = a.threads;
    opt.local_search = a.local_search;
    PipelineResult p;
    try {
      p = solve_pipeline(inst, opt);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "scale_table: %s: %s\n", inst.name.c_str(), e.what());
      return 1;
    }
    const SolveResult& r = p.result;
    char heur[96];
    std::snprintf(heur, sizeof heur, "%s %.2f", p.best_heuristic.empty() ? "none" : p.best_heuristic.c_str(),
                  p.best_heuristic_makespan);
    std::printf("| %s | %d | %.0f s | %s | %.2f | %.2f | %.2f%% | %s | %s | %s | %s |\n", inst.name.c_str(), ops,
                opt.time_limit, heur, r.makespan, r.bound, 100 * r.gap, seconds_text(seconds_to_gap(p.trace, 0.02)).c_str(),
                seconds_text(seconds_to_gap(p.trace, 0.01)).c_str(), p.best_from().c_str(), p.bound_from().c_str());
    std::fflush(stdout);
  }
  return 0;
}
