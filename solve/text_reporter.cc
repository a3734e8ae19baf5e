#include "solve/text_reporter.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "viz/bottleneck.h"
#include "viz/text_report.h"

namespace optpipe {

namespace {

std::string num(double x, int precision = 3) {
  if (!std::isfinite(x)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", precision, x);
  return buf;
}

double per_second(std::int64_t n, double seconds) { return seconds > 0 ? static_cast<double>(n) / seconds : 0.0; }

}  // namespace

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

void TextSolveReporter::on_cache_lookup(const cache::LookupResult& hit, const std::string& file) {
  if (opt_.quiet) return;
  out_ << "cache: " << hit.message << "; file " << file << "\n";
}

// Only the slow ones (a second or more), so that a long heuristics phase shows progress and a
// quick one prints nothing.
void TextSolveReporter::on_heuristic(const HeuristicResult& h, double seconds) {
  if (opt_.quiet || h.seconds < 1.0) return;
  out_ << "heuristic " << h.name << ": " << (h.ok() ? num(h.sim.makespan) + " ms" : std::string("no schedule"))
       << " after " << num(h.seconds, 1) << " s (" << num(seconds, 1) << " s into the solve)\n"
       << std::flush;
}

void TextSolveReporter::on_warm_starts(const WarmStartReport& r) {
  if (opt_.quiet) return;
  out_ << describe_instance(r.instance) << "\n" << r.ops << " compute ops\n";
  out_ << "warm starts:";
  int shown = 0;
  for (const auto& h : r.heuristics.results) {
    if (!h.ok()) continue;
    out_ << (shown++ % 4 == 0 ? "\n  " : "  ") << h.name << " " << num(h.sim.makespan);
  }
  if (shown == 0) out_ << " none fits";
  out_ << "\n";
  const BoundedWarmStarts& b = r.starts;
  if (b.bound > 0) {
    out_ << "lower bound " << num(b.bound) << " ms (the root's bounds"
         << (b.relaxation ? " with the single-stage relaxation, " : ", ") << num(b.bound_seconds, 2) << " s)"
         << (b.starts.reached_target ? ": a warm start meets it" : "") << "\n";
  }
  auto run_line = [&](const char* what, const ImprovedStart& i) {
    out_ << what << i.heuristic << ": " << num(i.before) << " -> " << num(i.after) << " ms (" << i.evaluations
         << " simulations, " << num(i.seconds, 2) << " s)\n";
  };
  auto local_search = [&](std::size_t k) {
    const bool quick_run = static_cast<int>(k) < b.quick_runs;
    run_line(quick_run ? "quick local search from " : "local search from ", b.starts.improved[k]);
  };
  const std::size_t quick = std::min(b.starts.improved.size(), static_cast<std::size_t>(std::max(0, b.quick_runs)));
  for (std::size_t k = 0; k < quick; ++k) local_search(k);
  if (const ProbingResult* p = r.probing) {  // before the tree first
    if (const TwoDeviceBound& t = p->two_device; t.pairs > 0) {
      out_ << "two-device relaxations: " << t.finished << " of " << t.pairs << " pairs above the bound, " << t.nodes
           << " nodes in " << num(p->two_device_seconds, 3) << " s"
           << (t.a >= 0 ? ", best " + num(t.bound) + " (devices " + std::to_string(t.a) + " and " + std::to_string(t.b) + ")"
                        : std::string())
           << "\n";
    }
    out_ << "probing from the bound " << num(p->start) << ":";
    for (std::size_t k = 0; k < p->steps.size(); ++k) {
      const ProbeStep& s = p->steps[k];
      out_ << (k ? ", " : " ") << (s.below_incumbent ? "below the incumbent " : "") << num(s.target) << " "
           << (s.found ? "found " + num(p->makespan) : s.refuted ? std::string("refuted") : std::string("stopped"))
           << " (" << s.nodes << " nodes)";
    }
    out_ << "; " << p->nodes << " nodes in " << num(p->seconds, 3) << " s, "
         << (p->proven                                              ? std::string("proven optimal")
             : !p->steps.empty() && p->steps.back().below_incumbent && p->steps.back().refuted
                 ? "the incumbent " + num(p->bound) + " is optimal"
                 : "bound " + num(p->bound) + ", not proven: the tree first next")
         << "\n";
  }
  if (const SolveResult* t = r.tree_first) {  // it runs between the quick and the full phase
    out_ << "tree search (a small instance): " << t->stats.nodes << " nodes in " << num(t->stats.seconds, 3) << " s, "
         << (t->status == SolveResult::Status::kOptimal
                 ? std::string("proven optimal")
                 : (t->schedule ? "best " + num(t->makespan) + " ms" : std::string("no schedule")) +
                       ", not proven: the relaxation and the full local search next")
         << "\n";
    if (t->stats.beside_seconds > 0) {
      out_ << "  beside it, a local search from " << b.starts.improved.front().heuristic << ": "
           << t->stats.beside_improvements << " better schedule(s) for the tree in " << num(t->stats.beside_seconds, 3)
           << " s\n";
    }
  }
  if (const ImprovedStart* i = r.tree_polish) run_line("local search from ", *i);
  for (std::size_t k = quick; k < b.starts.improved.size(); ++k) local_search(k);
}

void TextSolveReporter::on_root_bound(double bound) {
  if (opt_.quiet) return;
  out_ << "root bound " << num(bound) << "\n\n";
}

void TextSolveReporter::on_lns(double seconds, double before, double after, int improvements) {
  if (opt_.quiet) return;
  out_ << "large neighbourhood search: " << num(before) << " -> " << num(after) << " ms (" << improvements
       << " improvements in " << num(seconds, 2) << " s)\n\n";
}

void TextSolveReporter::on_progress(const SolveProgress& p) {
  if (opt_.quiet) return;
  char line[256];
  if (!header_printed_) {
    std::snprintf(line, sizeof line, "%8s %12s %10s %12s %12s %8s %10s\n", "time", "nodes", "open", "incumbent",
                  "bound", "gap", "nodes/s");
    out_ << line;
    header_printed_ = true;
  }
  std::snprintf(line, sizeof line, "%7.1fs %12lld %10lld %12s %12s %7s%% %10.0f\n", p.seconds,
                static_cast<long long>(p.nodes), static_cast<long long>(p.open), num(p.incumbent).c_str(),
                num(p.bound).c_str(), std::isfinite(p.gap) ? num(100 * p.gap, 2).c_str() : "-",
                per_second(p.nodes, p.seconds));
  out_ << line << std::flush;
}

void TextSolveReporter::on_cache_store(cache::StoreOutcome outcome, const std::string& file) {
  if (opt_.quiet || !opt_.verbose) return;
  out_ << "cache: " << cache::to_string(outcome) << " in " << file << "\n";
}

void TextSolveReporter::done_from_cache(const Instance& inst, const PipelineResult& r, const SimResult& sim,
                                        const WrittenFiles& files) {
  if (!opt_.quiet) out_ << describe_instance(inst) << "\n";
  out_ << "\nstatus optimal (cache: exact hit, proven optimal; no search)\n";
  out_ << "makespan " << num(r.result.makespan) << " ms, bound " << num(r.result.makespan) << " ms, gap 0.00%\n";
  out_ << summarize(inst, sim);
  out_ << "search: none (answered from the cache, entry " << r.cache_key.substr(0, 12) << ")\n";
  if (!files.schedule.empty()) out_ << "wrote " << files.schedule << "\n";
  if (!files.svg.empty()) out_ << "wrote " << files.svg << "\n";
}

void TextSolveReporter::search_statistics(const SolveStats& s) {
  out_ << "  pruned by bound " << s.pruned_bound << ", by deadlock " << s.pruned_deadlock << ", by dominance "
       << s.pruned_dominance << ", by transposition " << s.pruned_transposition << " (" << s.transposition_stored
       << " states kept); bound calls " << s.bound_calls << " (critical path best " << s.critical_path_best
       << ", one-machine best " << s.one_machine_best << ", channel best " << s.channel_best
       << ", memory energy best " << s.memory_best << ", left out " << s.memory_energy_skipped
       << "); incumbent updates " << s.incumbent_updates << "\n";
  out_ << "  nodes by depth (decisions from the root): " << depth_histogram(s.nodes_by_depth) << "\n";
  if (s.time_quantum > 0) {
    out_ << "  time quantum " << s.time_quantum << " ms: every makespan is a multiple of it, so nodes are cut half of it below the incumbent and bounds round up to it\n";
  }
  if (s.group_energy_bound > 0) out_ << "  PCIe group energy bound at the root: " << num(s.group_energy_bound) << "\n";
  if (s.group_forward_bound > 0) out_ << "  PCIe group forward bound at the root: " << num(s.group_forward_bound) << "\n";
  if (s.byte_energy_bound > 0) out_ << "  byte-time energy bound at the root: " << num(s.byte_energy_bound) << "\n";
  if (s.device_relaxation_nodes > 0 || s.device_relaxation_bound > 0) {
    out_ << "  device relaxation at the root: " << num(s.device_relaxation_bound);
    if (s.device_relaxation_device >= 0) out_ << " (device " << s.device_relaxation_device << ")";
    if (s.device_relaxation_nodes > 0) out_ << ", " << s.device_relaxation_nodes << " nodes";
    else out_ << ", computed before the search";
    if (s.device_pairs_raised > 0) out_ << "; the pair releases raised it by " << num(s.device_pairs_raised);
    out_ << "\n";
  }
  if (s.device_node_calls > 0) {
    out_ << "  device relaxation at nodes: " << s.device_node_calls << " calls (" << s.device_node_hits
         << " more answered from the memo; " << s.device_node_unfinished << " stopped at their node limit, "
         << s.device_node_skipped << " not asked below those, " << s.device_node_passed
         << " of devices that seldom cut passed over; " << s.device_node_witness
         << " of the calls answered by an earlier relaxed schedule, re-timed), "
         << s.device_node_nodes << " nodes, " << s.pruned_device << " nodes cut\n";
  }
  if (s.single_stage_nodes > 0 || s.single_stage_root_nodes > 0) {
    out_ << "  single-stage relaxation at the root: bound "
         << (s.single_stage_bound > 0 ? num(s.single_stage_bound) : std::string("none")) << " ("
         << s.single_stage_root_nodes << " nodes, " << num(s.single_stage_seconds, 3) << " s"
         << (s.last_tail_searches > 0 ? "; with the last tails: " + std::to_string(s.last_tail_searches) +
                                            " searched again, " + std::to_string(s.last_tail_raised) + " raised"
                                      : std::string())
         << ")\n";
    out_ << "  relaxation at nodes: " << s.relaxation_calls << " calls (" << s.spec_rule_calls
         << " of them the first stage's under the spec's start rules; " << s.relaxation_unfinished
         << " unfinished"
         << (s.relaxation_over_budget > 0
                 ? "; " + std::to_string(s.relaxation_over_budget) + " skipped over their budget"
                 : std::string())
         << "; " << s.relaxation_search_nodes << " search nodes), " << s.relaxation_hits << " memo hits, "
         << s.pruned_relaxation
         << " nodes cut; with the node's heads: " << s.node_relaxation_calls << " calls, " << s.node_relaxation_hits
         << " memo answers\n";
  }
  const double thread_seconds = s.seconds * s.threads;
  out_ << "  bounds: " << num(s.bound_seconds, 2) << " thread-s on " << to_string(s.bounds_backend) << " ("
       << num(thread_seconds > 0 ? 100 * s.bound_seconds / thread_seconds : 0, 0) << "% of the search's thread-time)\n";
  if (s.beside_seconds > 0) {
    out_ << "  beside the tree, the local search in rounds: " << s.beside_improvements << " better schedule(s) in "
         << num(s.beside_seconds, 2) << " s\n";
  }
  if (s.lns_repairs > 0) {
    out_ << "  large neighbourhood search: " << s.lns_repairs << " repairs, " << s.lns_improvements
         << " improvements, " << s.lns_nodes << " nodes, " << num(s.lns_seconds, 2) << " s\n";
  }
}

void TextSolveReporter::done(const Instance& inst, const PipelineResult& r, const SimResult& sim,
                             const WrittenFiles& files) {
  if (r.from_cache) return done_from_cache(inst, r, sim, files);
  const SolveResult& res = r.result;
  const SolveStats& s = res.stats;
  out_ << "\nstatus " << to_string(res.status) << " (" << res.reason << ")\n";
  if (res.schedule) {
    out_ << "makespan " << num(res.makespan) << " ms, bound " << num(res.bound) << " ms, gap "
         << num(100 * res.gap, 2) << "%, root bound " << num(res.root_bound) << " ms\n";
    if (!r.best_heuristic.empty()) {
      const double heuristic = r.best_heuristic_makespan;
      const double gain = heuristic - res.makespan;
      out_ << "best heuristic " << r.best_heuristic << " " << num(heuristic) << " ms: "
           << (gain > 1e-9 ? "improved by " + num(gain) + " ms (" + num(100 * gain / heuristic, 2) + "%)"
                           : std::string("not improved"))
           << "\n";
    } else {
      out_ << "no heuristic fits; the solver found the only schedule\n";
    }
    out_ << summarize(inst, sim) << explain_bottleneck(inst, sim);
  }
  out_ << "search: " << s.nodes << " nodes in " << num(s.seconds, 2) << " s (" << num(per_second(s.nodes, s.seconds), 0)
       << " nodes/s), started " << num(r.search_started, 2) << " s into the solve"
       << (r.tree_resumed ? ", going on from the tree first's open nodes" : "")
       << (r.probing_resumed ? ", going on from probing's open nodes" : "") << "\n";
  if (res.schedule) {  // when the schedule written was found, on the solve's clock (issue 23)
    const std::string from = r.best_from();
    out_ << "best schedule: "
         << (from == "search" ? "found by the search" : from == "warm start" ? "a warm start" : "from the warm start " + from)
         << ", " << num(r.seconds_to_best(), 2) << " s into the solve\n";
  }
  if (s.pool_full > 0) {
    out_ << "open-node pool full " << s.pool_full
         << " times: those subtrees were searched depth-first outside it (raise --pool-memory for a more "
            "best-first search)\n";
  }
  if (s.bounds_backend != BoundsMode::kCpu) {
    out_ << "bounds on " << to_string(s.bounds_backend) << ": " << s.batches << " batches, " << s.batched_nodes
         << " nodes bounded in them\n";
  }
  if (opt_.verbose) search_statistics(s);
  if (!files.schedule.empty()) out_ << "wrote " << files.schedule << "\n";
  if (files.schedule.empty() && res.schedule) {  // say where the result is (issue 23)
    out_ << (files.cache.empty()
                 ? std::string("the schedule was not saved: give -o FILE.json to write it")
                 : "no -o: the schedule is kept in the cache " + files.cache +
                       "; run again with -o FILE.json to write it (the cache gives it back, at once when proven "
                       "optimal)")
         << "\n";
  }
  if (!files.svg.empty() && res.schedule) out_ << "wrote " << files.svg << "\n";
}

}  // namespace optpipe
