// optpipe.solve(): one solve as the library runs it (solve/solve_pipeline.h: cache, warm starts,
// root bound, branch-and-bound), with the GIL released, and its result type SolveResult.
//
// The pipeline runs on a thread of its own. The calling thread waits without the GIL, and every
// 50 ms takes it to check for signals (PyErr_CheckSignals) and to hand the latest progress to the
// optional Python callback. A KeyboardInterrupt (Ctrl-C) sets the pipeline's stop flag; the solve
// then returns its best schedule, which solve() returns with interrupted True, as `optpipe solve`
// writes its best schedule after Ctrl-C. Any other exception (from the callback or a signal
// handler) also stops the solve and is raised once it has returned.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include "cache/schedule_cache.h"
#include "model/error.h"
#include "python/src/bindings.h"
#include "search/bounds_mode.h"
#include "search/search_stats.h"
#include "solve/json_reporter.h"
#include "solve/solve_pipeline.h"
#include "viz/text_report.h"

namespace optpipe::python {
namespace {

struct PySolveResult {
  PipelineResult pipeline;
  bool interrupted = false;
};

// Keeps what the solving threads report for the calling thread to pass on with the GIL.
class Relay : public SolveObserver {
 public:
  void on_warning(const std::string& message) override {
    std::lock_guard lock(mu_);
    warnings_.push_back(message);
  }
  void on_progress(const SolveProgress& progress) override {
    std::lock_guard lock(mu_);
    progress_ = progress;
  }
  std::optional<SolveProgress> take_progress() {
    std::lock_guard lock(mu_);
    return std::exchange(progress_, std::nullopt);
  }
  std::vector<std::string> take_warnings() {
    std::lock_guard lock(mu_);
    return std::exchange(warnings_, {});
  }

 private:
  std::mutex mu_;
  std::optional<SolveProgress> progress_;
  std::vector<std::string> warnings_;
};

using CacheArg = std::optional<std::variant<bool, std::filesystem::path>>;
using ProgressArg = std::optional<nb::typed<nb::callable, void(const SolveProgress&)>>;

// None or False: no cache; True: the default file ($OPTPIPE_CACHE, else ~/.cache/...); a path.
std::string cache_file(const CacheArg& cache) {
  if (!cache) return "";
  if (const bool* on = std::get_if<bool>(&*cache)) return *on ? cache::default_cache_path() : "";
  return path_text(std::get<std::filesystem::path>(*cache));
}

PipelineOptions options(double time_limit, int threads, double gap, std::int64_t node_limit, std::int64_t local_search,
                        double lns, const std::vector<Schedule>& warm_starts, const CacheArg& cache,
                        const std::string& bounds, bool transposition, bool stage_relaxation,
                        bool device_relaxation, bool probing) {
  if (!(time_limit >= 0)) throw InputError("time_limit: must be >= 0 seconds, got " + std::to_string(time_limit));
  if (threads < 0) throw InputError("threads: must be >= 0 (0: all hardware threads), got " + std::to_string(threads));
  if (!(gap >= 0 && gap <= 1)) throw InputError("gap: must be in [0, 1], got " + std::to_string(gap));
  if (!(lns >= 0 && lns <= 1)) throw InputError("lns: must be in [0, 1], got " + std::to_string(lns));
  PipelineOptions o;
  o.time_limit = time_limit;
  o.threads = threads;
  o.gap = gap;
  o.node_limit = node_limit;
  o.local_search = local_search;
  o.lns = lns;
  o.warm_starts = warm_starts;
  o.cache_file = cache_file(cache);
  o.build = build_string();
  const std::optional<BoundsMode> mode = parse_bounds_mode(bounds);
  if (!mode) throw InputError("bounds: must be cpu, tbb, gpu or auto, not '" + bounds + "'");
  o.bounds = *mode;
  o.transposition = transposition;
  o.stage_relaxation = stage_relaxation;
  o.device_relaxation = device_relaxation;
  o.probing = probing;
  return o;
}

PySolveResult run(const Instance& inst, double time_limit, int threads, double gap, std::int64_t node_limit,
                  std::int64_t local_search, double lns, const std::vector<Schedule>& warm_starts, const CacheArg& cache,
                  const std::string& bounds, bool transposition, bool stage_relaxation, bool device_relaxation,
                  bool probing, const ProgressArg& progress) {
  PipelineOptions o = options(time_limit, threads, gap, node_limit, local_search, lns, warm_starts, cache, bounds,
                              transposition, stage_relaxation, device_relaxation, probing);
  std::atomic<bool> stop{false};
  o.stop = &stop;
  Relay relay;
  PySolveResult out;
  std::exception_ptr failure;
  std::mutex mu;
  std::condition_variable finished_cv;
  bool finished = false;
  std::optional<nb::python_error> raised;  // from the callback or a signal handler, raised at the end

  std::thread solver([&] {
    try {
      out.pipeline = solve_pipeline(inst, o, relay);
    } catch (...) {
      failure = std::current_exception();
    }
    std::lock_guard lock(mu);
    finished = true;
    finished_cv.notify_all();
  });

  // With the GIL held: signals, then progress. Returns false once the solve should stop.
  auto poll = [&]() {
    if (PyErr_CheckSignals() != 0) {
      nb::python_error e;
      if (e.matches(PyExc_KeyboardInterrupt)) {
        out.interrupted = true;
      } else if (!raised) {
        raised.emplace(std::move(e));
      }
      return false;
    }
    if (!progress) return true;
    if (std::optional<SolveProgress> p = relay.take_progress()) {
      try {
        (*progress)(*p);
      } catch (nb::python_error& e) {
        if (e.matches(PyExc_KeyboardInterrupt)) {
          out.interrupted = true;
        } else if (!raised) {
          raised.emplace(std::move(e));
        }
        return false;
      }
    }
    return true;
  };

  {
    nb::gil_scoped_release release;
    std::unique_lock lock(mu);
    while (!finished_cv.wait_for(lock, std::chrono::milliseconds(50), [&] { return finished; })) {
      if (stop.load()) continue;  // stopping: only wait
      lock.unlock();
      bool go_on = true;
      {
        nb::gil_scoped_acquire acquire;
        try {
          go_on = poll();
        } catch (...) {  // e.g. a conversion error: stop and report it after the solve
          stop.store(true);
          lock.lock();
          finished_cv.wait(lock, [&] { return finished; });
          lock.unlock();
          solver.join();
          throw;
        }
      }
      if (!go_on) stop.store(true);
      lock.lock();
    }
  }
  solver.join();
  for (const std::string& w : relay.take_warnings()) warn(w);
  if (failure) std::rethrow_exception(failure);
  if (raised) throw std::move(*raised);
  return out;
}

JsonDict statistics(const SolveStats& s) {
  nb::dict out;
#define OPTPIPE_PY_COUNTER(name, what) out[#name] = s.name;
  OPTPIPE_SEARCH_COUNTERS(OPTPIPE_PY_COUNTER)
#undef OPTPIPE_PY_COUNTER
#define OPTPIPE_PY_SECONDS(name, what) out[#name] = s.name;
  OPTPIPE_SEARCH_SECONDS(OPTPIPE_PY_SECONDS)
#undef OPTPIPE_PY_SECONDS
  out["threads"] = s.threads;
  out["seconds"] = s.seconds;
  out["seconds_to_best"] = s.seconds_to_best;
  out["single_stage_bound"] = s.single_stage_bound;
  out["device_relaxation_bound"] = s.device_relaxation_bound;
  out["device_relaxation_device"] = s.device_relaxation_device;
  out["device_pairs_raised"] = s.device_pairs_raised;
  out["nodes_by_depth"] = s.nodes_by_depth;
  return JsonDict(out);
}

// The targets probing tried (search/bound_probing.h) as the JSON log has them, or None where it
// did not run.
std::optional<JsonDict> probing_dict(const std::optional<ProbingResult>& p) {
  if (!p) return std::nullopt;
  return to_dict(probing_to_json(*p));
}

std::optional<std::string> unless_empty(const std::string& s) {
  return s.empty() ? std::nullopt : std::optional<std::string>(s);
}

std::string describe(const PySolveResult& r) {
  const SolveResult& s = r.pipeline.result;
  std::string out = std::string("<optpipe.SolveResult ") + to_string(s.status);
  if (s.schedule) {
    out += ", makespan " + fmt_ms(s.makespan) + ", bound " + fmt_ms(s.bound) + ", gap " + fmt_percent(s.gap);
  }
  if (r.interrupted) out += ", interrupted";
  return out + ">";
}

}  // namespace

void bind_solve(nb::module_& m) {
  nb::class_<SolveProgress>(m, "SolveProgress", "The search's progress, about once a second (solve(progress=...)).")
      .def_ro("seconds", &SolveProgress::seconds, "Seconds since the search started.")
      .def_ro("nodes", &SolveProgress::nodes, "Nodes expanded.")
      .def_ro("open", &SolveProgress::open, "Open nodes in the pool.")
      .def_ro("incumbent", &SolveProgress::incumbent, "The best makespan so far, ms.")
      .def_ro("bound", &SolveProgress::bound, "The proven lower bound, ms.")
      .def_ro("gap", &SolveProgress::gap, "(incumbent - bound) / incumbent.")
      .def("__repr__", [](const SolveProgress& p) {
        return "<optpipe.SolveProgress " + nlohmann::json(p.seconds).dump() + " s, " + std::to_string(p.nodes) +
               " nodes, incumbent " + nlohmann::json(p.incumbent).dump() + ", bound " + nlohmann::json(p.bound).dump() +
               ">";
      });

  nb::class_<PySolveResult>(m, "SolveResult", "What solve() found: the best schedule, its status and the proven bound.")
      .def_prop_ro("schedule", [](const PySolveResult& r) { return r.pipeline.result.schedule; },
                   "The best schedule found (None when there is none), with makespan, status, bound and gap.")
      .def_prop_ro("status", [](const PySolveResult& r) { return std::string(to_string(r.pipeline.result.status)); },
                   "'optimal' (proven), 'feasible' (a schedule, not proven optimal), 'infeasible' (proven: no\n"
                   "schedule fits) or 'unknown' (stopped before finding any).")
      .def_prop_ro("makespan", [](const PySolveResult& r) { return r.pipeline.result.makespan; },
                   "ms of the schedule (inf without one).")
      .def_prop_ro("bound", [](const PySolveResult& r) { return r.pipeline.result.bound; },
                   "A proven lower bound on the optimum, ms (= makespan when optimal).")
      .def_prop_ro("gap", [](const PySolveResult& r) { return r.pipeline.result.gap; },
                   "(makespan - bound) / makespan (inf without a schedule).")
      .def_prop_ro("root_bound", [](const PySolveResult& r) { return r.pipeline.result.root_bound; })
      .def_prop_ro("seconds", [](const PySolveResult& r) { return r.pipeline.seconds; }, "Wall time of the solve.")
      .def_prop_ro("nodes", [](const PySolveResult& r) { return r.pipeline.result.stats.nodes; },
                   "Search nodes expanded.")
      .def_prop_ro("best_heuristic", [](const PySolveResult& r) { return unless_empty(r.pipeline.best_heuristic); },
                   "The name of the best heuristic (None: none fits, or the cache answered).")
      .def_prop_ro("best_heuristic_makespan", [](const PySolveResult& r) { return r.pipeline.best_heuristic_makespan; })
      .def_prop_ro("warm_start", [](const PySolveResult& r) { return unless_empty(r.pipeline.result.warm_start); },
                   "Which warm start was best.")
      .def_prop_ro("reason", [](const PySolveResult& r) { return r.pipeline.result.reason; },
                   "Why the search stopped (infeasible: why no schedule fits).")
      .def_prop_ro("from_cache", [](const PySolveResult& r) { return r.pipeline.from_cache; },
                   "True when a proven optimal cache entry answered (no search).")
      .def_ro("interrupted", &PySolveResult::interrupted,
              "True when Ctrl-C (KeyboardInterrupt) stopped the solve; the result is its best so far.")
      .def_prop_ro("statistics", [](const PySolveResult& r) { return statistics(r.pipeline.result.stats); },
                   "The search's counters (search/search_stats.h), as `optpipe solve -v` prints them.")
      .def_prop_ro("probing", [](const PySolveResult& r) { return probing_dict(r.pipeline.probing); },
                   "The targets tried above the bound before the tree (small instances without offload),\n"
                   "as `optpipe solve -v` lists them: a dict with start (the bound it started from),\n"
                   "targets (each target, found, refuted, nodes, seconds), bound, proven, makespan (None:\n"
                   "none found), nodes and seconds, as the JSON log's; None where it did not run.")
      .def("__repr__", &describe);

  m.def("solve", &run, nb::arg("instance"), nb::kw_only(), nb::arg("time_limit") = 60.0, nb::arg("threads") = 0,
        nb::arg("gap") = 0.0, nb::arg("node_limit") = -1, nb::arg("local_search") = -1, nb::arg("lns") = 0.0,
        nb::arg("warm_starts") = std::vector<Schedule>{}, nb::arg("cache") = nb::none(), nb::arg("bounds") = "cpu",
        nb::arg("transposition") = true, nb::arg("stage_relaxation") = true, nb::arg("device_relaxation") = true,
        nb::arg("probing") = true, nb::arg("progress") = nb::none(),
        "Finds the minimum-makespan schedule and proves it optimal when it can, as `optpipe solve` does: the\n"
        "heuristics and a local search give warm starts, then the branch-and-bound runs for what is left of\n"
        "`time_limit` seconds (all of it counts). It stops at the time limit, after `node_limit` nodes (-1:\n"
        "none), at relative `gap`, or on Ctrl-C, and returns the best schedule with its status and bound.\n"
        "\n"
        "threads: worker threads (0: all). local_search: simulations per improved warm start (-1: from the\n"
        "time limit, 0: none). lns: share of the time limit for large neighbourhood search. warm_starts:\n"
        "more schedules to start from. cache: None or False (default: no schedule cache), True (the default\n"
        "file, $OPTPIPE_CACHE or ~/.cache/optpipe/schedules.sqlite) or a path. bounds: 'cpu', 'tbb', 'gpu'\n"
        "or 'auto'. transposition, stage_relaxation, device_relaxation, probing: False turns that part of the\n"
        "search off, for comparisons (`optpipe solve --no-...`). progress: called with a SolveProgress about once a\n"
        "second during the search, on the calling thread.\n"
        "\n"
        "The GIL is released while it runs, so other Python threads go on. Ctrl-C (KeyboardInterrupt) does\n"
        "not raise: it stops the solve, which returns its best schedule so far with interrupted=True\n"
        "(status 'feasible', or 'unknown' without a schedule). The heuristics and the local search finish\n"
        "their work before the stop is seen (seconds on large instances). An exception from `progress`\n"
        "stops the solve and is raised.");
}

}  // namespace optpipe::python
