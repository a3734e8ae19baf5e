// Where along a schedule does the node bound become tight? Replays a feasible schedule through
// the search's time-ordered decisions (model/simulator.h, open lists) and prints, at each
// decision, the parts of the node bound (bounds/node_bound.h) and which one is best; then
// the depth and time at which the bound first reaches the schedule's makespan. Every node along
// the path has the schedule as a completion, so no bound may exceed its makespan (the program
// says so loudly if one does). Run it on the best known schedule of an instance the search
// cannot prove: a bound that reaches the makespan only deep in the path is why the tree is big.
//
//   ./build/bench/bound_trace INSTANCE SCHEDULE [--every N] [--relaxation]
//
// --relaxation adds two columns: the largest single-stage relaxation at the node with its own
// heads and times, free model (bounds/single_stage_relaxation.h, at most 1M search nodes
// per stage; "-" where it applies to no stage or does not finish), and from each stage's history
// only, the first stage under the spec's start rules, as the search uses it at every node.
//
// Complexity: one node bound per decision (O(N) decisions for N actions), plus the relaxation's
// searches when asked for.
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <exception>
#include <string>
#include <vector>

#include "model/action.h"
#include "bounds/bound_problem.h"
#include "bounds/node_bound.h"
#include "bounds/single_stage_relaxation.h"
#include "model/instance_io.h"
#include "model/schedule_io.h"
#include "model/simulator.h"
#include "model/validator.h"

using namespace optpipe;

namespace {

const char* const kPartNames[4] = {"critical path", "one machine", "channel", "memory energy"};

// Index into kPartNames of the part that gives the bound (the later part on a tie).
int best_part(const NodeBoundParts& b) {
  const double v = b.value();
  if (b.memory_energy >= v) return 3;
  if (b.channel >= v) return 2;
  if (b.one_machine >= v) return 1;
  return 0;
}

int usage(const char* why) {
  std::fprintf(stderr, "bound_trace: %s\nusage: bound_trace INSTANCE SCHEDULE [--every N] [--relaxation]\n", why);
  return 2;
}

// The largest finished single-stage relaxation at the node whose times, transfers and heads are
// in `work` (`history`: from each stage's own history only, as the search uses it, the first
// stage under the spec's start rules where they apply); NaN when none applies or finishes.
double relaxation_at(const Instance& inst, const BoundProblem& p, const NodeBoundWork& work, bool history) {
  double best = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (int s = 0; s < p.S; ++s) {
    const SingleStageRelaxation r =
        history ? single_stage_relaxation_of_history(inst, p, s, work.times, work.transfers, inf, 1'000'000,
                                                     strongest_start_rules(inst, p, s))
                : single_stage_relaxation_at_node(inst, p, s, work.times, work.transfers, work.head, inf, 1'000'000);
    if (r.finished && !(r.bound <= best)) best = r.bound;
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> files;
  int every = 1;
  bool relaxation = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--relaxation") {
      relaxation = true;
    } else if (a == "--every" && i + 1 < argc) {
      every = std::atoi(argv[++i]);
      if (every < 1) return usage("--every needs a positive count");
    } else if (a == "-h" || a == "--help") {
      std::printf("usage: bound_trace INSTANCE SCHEDULE [--every N] [--relaxation]\n"
                  "Prints the node bound and its parts at every N-th decision along the schedule;\n"
                  "--relaxation adds the single-stage relaxation at each printed node.\n");
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      return usage(("unknown option " + a).c_str());
    } else {
      files.push_back(a);
    }
  }
  if (files.size() != 2) return usage("needs an instance and a schedule");
  try {
    const Instance inst = load_instance(files[0]);
    const Schedule sch = load_schedule(files[1]);
    const Validation v = validate(inst, sch);
    if (!v.valid()) return usage((files[1] + ": " + v.violations.front().message).c_str());
    if (!v.sim->feasible) return usage((files[1] + ": infeasible: " + v.sim->reason).c_str());
    const double makespan = v.sim->makespan;
    const BoundProblem problem(inst);
    NodeBoundWork work;
    Simulator sim(inst);
    sim.start_open();
    Simulator::Step step = sim.advance();
    std::vector<std::size_t> next(sch.devices.size(), 0);
    int depth = 0, tight_depth = -1, over = 0;
    double root = 0, tight_time = 0;
    int best_counts[4] = {0, 0, 0, 0};
    std::printf("%s: makespan %.3f ms\n%6s %10s %6s %-9s %10s %10s %10s %10s %10s  %s%s\n", files[1].c_str(), makespan,
                "depth", "time", "device", "action", "crit.path", "one mach.", "channel", "mem.energy", "bound",
                relaxation ? "1-stage    history   " : "", "best");
    int relax_over = 0;
    while (step.kind == Simulator::Step::Kind::kDecision) {
      const NodeBoundParts b = node_bound_parts(problem, sim.snapshot(), step.time, work);
      const double value = b.value();
      if (depth == 0) root = value;
      const int best = best_part(b);
      ++best_counts[best];
      if (value > makespan + 1e-6) ++over;
      if (tight_depth < 0 && value >= makespan - 1e-6) {
        tight_depth = depth;
        tight_time = step.time;
      }
      if (next[step.device] >= sch.devices[step.device].size()) {
        return usage(("a decision for device " + std::to_string(step.device) + " after its list ended").c_str());
      }
      const Action a = sch.devices[step.device][next[step.device]++];
      if (depth % every == 0 || value > makespan + 1e-6) {
        std::string relax_text;
        if (relaxation) {
          const double r = relaxation_at(inst, problem, work, false);
          const double h = relaxation_at(inst, problem, work, true);
          for (double x : {r, h}) {
            char buf[32];
            if (x == x) {
              std::snprintf(buf, sizeof buf, "%10.3f", x);
            } else {
              std::snprintf(buf, sizeof buf, "%10s", "-");
            }
            relax_text += std::string(buf) + " ";
          }
          relax_text += " ";
          if (h > makespan + 1e-6) ++relax_over;
          if (r > makespan + 1e-6) {
            ++relax_over;
            relax_text += "(RELAXATION ABOVE THE MAKESPAN) ";
          }
        }
        std::printf("%6d %10.3f %6d %-9s %10.3f %10.3f %10.3f %10.3f %10.3f  %s%s%s\n", depth, step.time, step.device,
                    to_string(a).c_str(), b.critical_path, b.one_machine, b.channel, b.memory_energy, value,
                    relax_text.c_str(), kPartNames[best],
                    value > makespan + 1e-6 ? "  ABOVE THE MAKESPAN: an invalid bound" : "");
      }
      sim.append(step.device, a);
      step = sim.advance();
      ++depth;
    }
    std::printf("\n%d decisions; root bound %.3f (gap %.2f%%); ", depth, root, 100.0 * (makespan - root) / makespan);
    if (tight_depth >= 0) {
      std::printf("the bound reaches the makespan at decision %d (t = %.3f ms, %.0f%% of the path)\n", tight_depth,
                  tight_time, 100.0 * tight_depth / std::max(1, depth));
    } else {
      std::printf("the bound never reaches the makespan (the schedule may not be optimal)\n");
    }
    std::printf("best part: critical path %d, one machine %d, channel %d, memory energy %d decisions\n",
                best_counts[0], best_counts[1], best_counts[2], best_counts[3]);
    if (over > 0 || relax_over > 0) {
      std::printf("ERROR: %d nodes have a bound (and %d a relaxation) above the makespan of a completion\n", over,
                  relax_over);
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bound_trace: %s\n", e.what());
    return 2;
  }
}
