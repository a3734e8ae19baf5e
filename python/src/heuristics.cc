// optpipe.schedule() and optpipe.heuristics(): the baseline heuristics (heuristics/registry.h),
// one by name or all of them ("best", in parallel) keeping the fastest schedule that fits.
#include <string>
#include <utility>
#include <vector>

#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "heuristics/registry.h"
#include "model/error.h"
#include "model/validator.h"  // obviously_infeasible
#include "python/src/bindings.h"

namespace optpipe::python {
namespace {

Schedule run(const Instance& inst, const std::string& heuristic, bool parallel) {
  const Heuristic* chosen = nullptr;
  if (heuristic != "best") {
    chosen = find_heuristic(heuristic);
    if (!chosen) {
      throw InputError("heuristic: unknown heuristic \"" + heuristic + "\" (choose best or one of: " + heuristic_names() +
                       ")");
    }
  }
  if (auto why = obviously_infeasible(inst)) throw NoSchedule(*why);
  BestResult best;
  {
    nb::gil_scoped_release release;
    if (chosen) {
      best.results.push_back(run_heuristic(*chosen, inst));
      best.best = best.results.back().ok() ? 0 : -1;
    } else {
      best = run_all_heuristics(inst, parallel);
    }
  }
  if (const HeuristicResult* r = best.best_result()) return *r->schedule;
  std::string message = chosen ? heuristic + ": " + best.results[0].reason
                               : "no heuristic found a schedule that fits in memory:";
  if (!chosen) {
    for (const HeuristicResult& r : best.results) message += "\n  " + r.name + ": " + r.reason;
  }
  throw NoSchedule(message);
}

}  // namespace

void bind_heuristics(nb::module_& m) {
  m.def("schedule", &run, nb::arg("instance"), nb::arg("heuristic") = "best", nb::kw_only(), nb::arg("parallel") = true,
        "A schedule from a baseline heuristic (`optpipe schedule`): `heuristic` names one (see heuristics()),\n"
        "or 'best' runs them all (in parallel unless parallel=False) and keeps the fastest that fits.\n"
        "The schedule carries makespan, bubble, peak memory, status 'feasible' and solver 'optpipe heuristic <title>'.\n"
        "Raises InfeasibleError with each heuristic's reason when none fits, InputError for an unknown name.");
  m.def(
      "heuristics",
      [] {
        std::vector<std::pair<std::string, std::string>> out;
        for (const auto& h : all_heuristics()) out.emplace_back(h->name(), h->description());
        return out;
      },
      "Every heuristic as (name, description), in the order reports list them.");
}

}  // namespace optpipe::python
