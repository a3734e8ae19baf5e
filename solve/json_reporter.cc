#include "solve/json_reporter.h"

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "model/json_number.h"

namespace optpipe {

namespace {

double per_second(std::int64_t n, double seconds) { return seconds > 0 ? static_cast<double>(n) / seconds : 0.0; }

void print(std::ostream& out, const nlohmann::json& j) { out << j.dump() << std::endl; }

nlohmann::json done_from_cache(const PipelineResult& r, const SimResult& sim) {
  const double ms = r.result.makespan;
  return nlohmann::json{{"event", "done"},       {"status", "optimal"},         {"makespan", ms},
                        {"bound", ms},           {"gap", 0.0},                  {"reason", r.result.reason},
                        {"seconds", 0.0},        {"nodes", 0},                  {"from_cache", true},
                        {"cache_key", r.cache_key}, {"peak_memory", sim.peak_memory}, {"bubble", sim.bubble}};
}

}  // namespace

nlohmann::json probing_to_json(const ProbingResult& p) {
  nlohmann::json steps = nlohmann::json::array();
  for (const ProbeStep& s : p.steps) {
    steps.push_back({{"target", s.target}, {"found", s.found}, {"refuted", s.refuted},
                     {"below_incumbent", s.below_incumbent}, {"nodes", s.nodes},
                     {"seconds", s.seconds}});
  }
  nlohmann::json two_device = nullptr;
  if (const TwoDeviceBound& t = p.two_device; t.pairs > 0) {
    two_device = {{"bound", t.bound},       {"devices", t.a >= 0 ? nlohmann::json{t.a, t.b} : nlohmann::json(nullptr)},
                  {"pairs", t.pairs},       {"lifted", t.finished},
                  {"nodes", t.nodes},       {"seconds", p.two_device_seconds}};
  }
  return {{"start", p.start},
          {"two_device", two_device},
          {"targets", steps},
          {"nodes", p.nodes},
          {"seconds", p.seconds},
          {"bound", p.bound},
          {"proven", p.proven},
          {"makespan", p.makespan < std::numeric_limits<double>::infinity() ? nlohmann::json(p.makespan)
                                                                           : nlohmann::json(nullptr)}};
}

void JsonSolveReporter::on_cache_lookup(const cache::LookupResult& hit, const std::string& file) {
  if (opt_.quiet) return;
  nlohmann::json ev{{"event", "cache"}, {"result", cache::to_string(hit.kind)}, {"file", file}, {"message", hit.message}};
  if (hit.schedule) {
    ev["makespan"] = hit.makespan;
    ev["proven_optimal"] = hit.proven_optimal;
    ev["repaired"] = hit.repaired;
    ev["key"] = hit.exact_key;
  }
  print(out_, ev);
}

// Only the slow ones (a second or more), as in the text report.
void JsonSolveReporter::on_heuristic(const HeuristicResult& h, double seconds) {
  if (opt_.quiet || h.seconds < 1.0) return;
  print(out_, {{"event", "heuristic"},
               {"name", h.name},
               {"makespan", h.ok() ? nlohmann::json(h.sim.makespan) : nlohmann::json(nullptr)},
               {"heuristic_seconds", h.seconds},
               {"seconds", seconds}});
}

void JsonSolveReporter::on_warm_starts(const WarmStartReport& r) {
  if (opt_.quiet) return;
  const Instance& inst = r.instance;
  nlohmann::json h{{"event", "start"}, {"instance", inst.name}, {"devices", inst.num_devices()},
                   {"stages", inst.num_stages()}, {"microbatches", inst.microbatches}, {"ops", r.ops}};
  for (const auto& res : r.heuristics.results) {
    if (res.ok()) h["warm_starts"][res.name] = res.sim.makespan;
  }
  const BoundedWarmStarts& b = r.starts;
  for (std::size_t k = 0; k < b.starts.improved.size(); ++k) {
    const ImprovedStart& i = b.starts.improved[k];
    h["local_search"].push_back({{"from", i.heuristic}, {"before", i.before}, {"after", i.after},
                                 {"evaluations", i.evaluations}, {"seconds", i.seconds},
                                 {"quick", static_cast<int>(k) < b.quick_runs}});
  }
  if (const ProbingResult* p = r.probing) h["probing"] = probing_to_json(*p);
  if (const SolveResult* t = r.tree_first) {
    h["tree_first"] = {{"nodes", t->stats.nodes}, {"seconds", t->stats.seconds},
                       {"proven", t->status == SolveResult::Status::kOptimal},
                       {"makespan", t->schedule ? nlohmann::json(t->makespan) : nlohmann::json(nullptr)}};
    if (t->stats.beside_seconds > 0) {
      h["tree_first"]["beside"] = {{"from", b.starts.improved.front().heuristic},
                                   {"improvements", t->stats.beside_improvements},
                                   {"seconds", t->stats.beside_seconds}};
    }
  }
  if (const ImprovedStart* i = r.tree_polish) {
    h["tree_first"]["local_search"] = {{"before", i->before}, {"after", i->after}, {"evaluations", i->evaluations},
                                       {"seconds", i->seconds}};
  }
  if (b.bound > 0) h["lower_bound"] = {{"bound", b.bound}, {"seconds", b.bound_seconds}, {"relaxation", b.relaxation}};
  print(out_, h);
}

void JsonSolveReporter::on_root_bound(double bound) {
  if (opt_.quiet) return;
  print(out_, {{"event", "root"}, {"bound", bound}});
}

void JsonSolveReporter::on_lns(double seconds, double before, double after, int improvements) {
  if (opt_.quiet) return;
  print(out_, {{"event", "lns"}, {"seconds", seconds}, {"before", before}, {"after", after}, {"improvements", improvements}});
}

void JsonSolveReporter::on_progress(const SolveProgress& p) {
  if (opt_.quiet) return;
  print(out_, {{"event", "progress"},
               {"seconds", p.seconds},
               {"nodes", p.nodes},
               {"open", p.open},
               {"incumbent", finite_or_null(p.incumbent)},
               {"bound", p.bound},
               {"gap", finite_or_null(p.gap)},
               {"nodes_per_second", per_second(p.nodes, p.seconds)}});
}

void JsonSolveReporter::on_cache_store(cache::StoreOutcome outcome, const std::string& file) {
  if (opt_.quiet) return;
  print(out_, {{"event", "cache_store"}, {"file", file}, {"outcome", cache::to_string(outcome)}});
}

void JsonSolveReporter::done(const Instance&, const PipelineResult& r, const SimResult& sim, const WrittenFiles& files) {
  if (r.from_cache) {
    nlohmann::json out = done_from_cache(r, sim);
    if (!files.schedule.empty()) out["output"] = files.schedule;
    print(out_, out);
    return;
  }
  const SolveResult& res = r.result;
  const SolveStats& s = res.stats;
  nlohmann::json out{{"event", "done"},
                     {"status", to_string(res.status)},
                     {"makespan", finite_or_null(res.makespan)},
                     {"bound", res.bound},
                     {"gap", finite_or_null(res.gap)},
                     {"root_bound", res.root_bound},
                     {"best_heuristic", r.best_heuristic.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.best_heuristic)},
                     {"best_heuristic_makespan", finite_or_null(r.best_heuristic_makespan)},
                     {"reason", res.reason},
                     {"seconds", s.seconds},
                     {"seconds_to_best", s.seconds_to_best},  // on the search's clock
                     {"search_started", r.search_started},    // on the solve's clock
                     {"tree_resumed", r.tree_resumed},
                     {"probing_resumed", r.probing_resumed},
                     {"total_seconds", r.seconds},
                     {"best_from", r.best_from()},
                     {"bound_from", r.bound_from()},
                     {"device_relaxation_bound", s.device_relaxation_bound},
                     {"device_pairs_raised", s.device_pairs_raised},
                     {"group_energy_bound", s.group_energy_bound},
                     {"group_forward_bound", s.group_forward_bound},
                     {"byte_energy_bound", s.byte_energy_bound},
                     {"time_quantum", s.time_quantum},
                     {"seconds_to_best_total", r.seconds_to_best()},  // on the solve's clock
                     {"nodes", s.nodes},
                     {"bound_calls", s.bound_calls},
                     {"pruned_bound", s.pruned_bound},
                     {"pruned_deadlock", s.pruned_deadlock},
                     {"pruned_dominance", s.pruned_dominance},
                     {"pruned_transposition", s.pruned_transposition},
                     {"bounds_backend", to_string(s.bounds_backend)},
                     {"batches", s.batches},
                     {"bound_seconds", s.bound_seconds}};
  nlohmann::json counters = nlohmann::json::object();
  s.for_each_counter([&](const char* name, std::int64_t value, const char*) { counters[name] = value; });
  out["stats"] = counters;
  if (s.beside_seconds > 0) out["beside"] = {{"improvements", s.beside_improvements}, {"seconds", s.beside_seconds}};
  if (res.schedule) out["peak_memory"] = sim.peak_memory, out["bubble"] = sim.bubble;
  if (opt_.verbose) out["nodes_by_depth"] = s.nodes_by_depth;
  if (!files.schedule.empty()) out["output"] = files.schedule;
  print(out_, out);
}

}  // namespace optpipe
