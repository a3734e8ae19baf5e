// The work of probing (search/bound_probing.h) on one instance from a given incumbent, on one
// thread and without time limits: a measurement that does not move with the machine's speed.
// The solve's own times on the 2-core development VM move by ±20% from run to run and by more
// between sessions, so changes of a few percent to the tree or its bounds are measured here:
// by the nodes it prints, or by the instructions under `valgrind --tool=callgrind` (bench/README.md,
// "Instructions instead of seconds").
//
//   ./build/bench/probing_work INSTANCE SCHEDULE        # the schedule's makespan as the incumbent
//   ./build/bench/probing_work INSTANCE --upper MS
//   options: --node-limit N (default 5,000,000, all targets together)
//
// With the instance's optimal schedule (`optpipe solve F -o S.json`) it does what `optpipe solve
// F --warm-start S.json --threads 1` probes: from the root's cheap bound (with the device
// relaxation), targets 0.1%, 0.25%, ... above the bound proven so far, the last one just below the
// incumbent; refuted, it proves the incumbent optimal.
//
// Complexity: that of probing (bound_probing.h).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <string>
#include <vector>

#include <tbb/global_control.h>

#include "model/instance_io.h"
#include "model/schedule_io.h"
#include "model/simulator.h"
#include "model/validator.h"
#include "search/bound_probing.h"
#include "search/solver.h"

using namespace optpipe;

namespace {

int usage(const char* why) {
  std::fprintf(stderr,
               "probing_work: %s\nusage: probing_work INSTANCE (SCHEDULE | --upper MS) [--node-limit N]\n", why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> files;
  double upper = std::numeric_limits<double>::quiet_NaN();
  long long node_limit = 5'000'000;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::printf("usage: probing_work INSTANCE (SCHEDULE | --upper MS) [--node-limit N]\n"
                  "Probing from the root's cheap bound up to the incumbent, one thread, no time limit:\n"
                  "its targets, nodes and seconds (see the header of bench/probing_work.cc).\n");
      return 0;
    }
    if ((a == "--upper" || a == "--node-limit") && i + 1 < argc) {
      char* end = nullptr;
      const std::string v = argv[++i];
      if (a == "--upper") {
        upper = std::strtod(v.c_str(), &end);
        if (end == v.c_str() || *end != '\0' || !(upper > 0)) return usage(("--upper needs a positive makespan, not " + v).c_str());
      } else {
        node_limit = std::strtoll(v.c_str(), &end, 10);
        if (end == v.c_str() || *end != '\0' || node_limit < 1) return usage(("--node-limit needs a positive count, not " + v).c_str());
      }
    } else if (!a.empty() && a[0] == '-') {
      return usage(("unknown option " + a).c_str());
    } else {
      files.push_back(a);
    }
  }
  const bool given = upper == upper;
  if (files.size() != (given ? 1u : 2u)) return usage("needs an instance and either a schedule or --upper");
  try {
    const Instance inst = load_instance(files[0]);
    if (!given) {
      const Schedule sch = load_schedule(files[1]);
      const Validation v = validate(inst, sch);
      if (!v.valid()) return usage((files[1] + ": " + v.violations.front().message).c_str());
      if (!v.sim->feasible) return usage((files[1] + ": infeasible: " + v.sim->reason).c_str());
      upper = v.sim->makespan;
    }
    tbb::global_control one_thread(tbb::global_control::max_allowed_parallelism, 1);
    SolveOptions search;
    search.threads = 1;
    search.time_limit = std::numeric_limits<double>::infinity();
    search.stage_relaxation = false;  // as the solve's tree first (solve/solve_pipeline.cc)
    const RootBound cheap = root_lower_bound(inst, upper, search);
    ProbingOptions po;
    po.search = search;
    po.search.root_relaxation = &cheap;
    po.bound = cheap.bound;
    po.upper = upper;
    po.node_limit = node_limit;
    po.grace = 1;  // node_limit is already the whole budget
    const auto t0 = std::chrono::steady_clock::now();
    const ProbingResult r = probe_targets(inst, po);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%s: root bound %.3f ms, incumbent %.3f ms\n", inst.name.c_str(), cheap.bound, upper);
    std::printf("  %12s %10s %12s %14s %9s\n", "target", "outcome", "nodes", "relax. nodes", "seconds");
    long long relaxation_nodes = 0;
    for (const ProbeStep& s : r.steps) {
      relaxation_nodes += s.relaxation_nodes;
      std::printf("  %12.3f %10s %12lld %14lld %9.3f%s\n", s.target,
                  s.found ? "found" : s.refuted ? "refuted" : "stopped", static_cast<long long>(s.nodes),
                  static_cast<long long>(s.relaxation_nodes), s.seconds,
                  s.below_incumbent ? "  (just below the incumbent)" : "");
    }
    const bool optimal = r.proven || r.bound >= upper - 1e-6;
    std::printf("total %lld nodes, %lld of the device relaxations at them, %.3f s; bound %.3f ms%s\n",
                static_cast<long long>(r.nodes), relaxation_nodes, seconds, r.bound,
                optimal ? ": the incumbent is optimal" : "");
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "probing_work: %s\n", e.what());
    return 2;
  }
}
