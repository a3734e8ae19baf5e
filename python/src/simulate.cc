// Measuring a schedule on an instance: optpipe.simulate() (model/simulator.h, the spec's timing
// exactly), optpipe.validate() (model/validator.h, every rule) and optpipe.render_svg()
// (viz/gantt_svg.h), with their result types SimResult, Transfer and Violation.
//
// simulate() and render_svg() need lists that pass the structural rules (the simulator's
// precondition): a schedule that breaks one raises InputError with the violations, and
// validate() lists them all. A deadlock is no error: it is a result with feasible False and
// the reason.
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "model/channel_load.h"
#include "model/error.h"
#include "model/simulator.h"
#include "model/validator.h"
#include "python/src/bindings.h"
#include "viz/gantt_svg.h"
#include "viz/text_report.h"

namespace optpipe::python {
namespace {

using Span = std::optional<std::pair<double, double>>;

// Throws InputError listing the structural violations (at most 5 of them), if any.
void require_structure(const Instance& inst, const Schedule& sch) {
  const std::vector<Violation> found = check_structure(inst, sch);
  if (found.empty()) return;
  std::string message = "schedule: does not fit the instance (validate() lists every problem): ";
  for (std::size_t i = 0; i < found.size() && i < 5; ++i) {
    message += (i ? "; [" : "[") + std::string(to_string(found[i].rule)) + "] " + found[i].message;
  }
  if (found.size() > 5) message += "; and " + std::to_string(found.size() - 5) + " more";
  throw InputError(message);
}

std::optional<int> unless_negative(int v) { return v < 0 ? std::nullopt : std::optional<int>(v); }

std::vector<std::vector<Span>> timeline(const SimResult& r) {
  std::vector<std::vector<Span>> out(r.timeline.size());
  for (std::size_t d = 0; d < r.timeline.size(); ++d) {
    for (const ActionTiming& t : r.timeline[d]) {
      out[d].push_back(t.done() ? Span(std::pair(t.start, t.end)) : std::nullopt);
    }
  }
  return out;
}

std::vector<std::vector<std::pair<double, double>>> memory_curves(const SimResult& r) {
  std::vector<std::vector<std::pair<double, double>>> out(r.memory.size());
  for (std::size_t d = 0; d < r.memory.size(); ++d) {
    for (const MemoryPoint& p : r.memory[d]) out[d].emplace_back(p.time, p.bytes);
  }
  return out;
}

std::string describe(const SimResult& r) {
  if (!r.feasible) return "<optpipe.SimResult infeasible: " + r.reason + ">";
  return "<optpipe.SimResult makespan " + fmt_ms(r.makespan) + ", bubble " + fmt_percent(r.bubble) + ">";
}

// ChannelLoad (model/channel_load.h): how busy each PCIe channel was.
void bind_channel_load(nb::module_& m) {
  nb::class_<ChannelLoad>(m, "ChannelLoad", "How busy one PCIe channel (one direction of one group) was in a simulation.")
      .def_ro("group", &ChannelLoad::group, "PCIe group index.")
      .def_prop_ro("direction", [](const ChannelLoad& c) { return std::string(c.reload ? "h2d" : "d2h"); },
                   "'d2h' (offloads) or 'h2d' (reloads).")
      .def_ro("transfers", &ChannelLoad::transfers, "Transfers that started on it.")
      .def_ro("busy", &ChannelLoad::busy, "ms with a transfer on it.")
      .def("share", &ChannelLoad::share, nb::arg("makespan"), "busy / makespan (0 for a makespan of 0).")
      .def("__repr__", [](const ChannelLoad& c) {
        return "<optpipe.ChannelLoad group " + std::to_string(c.group) + (c.reload ? " h2d" : " d2h") + ": " +
               std::to_string(c.transfers) + " transfers, busy " + fmt_ms(c.busy) + ">";
      });
}

}  // namespace

void bind_simulate(nb::module_& m) {
  bind_channel_load(m);
  nb::class_<Transfer>(m, "Transfer", "One offload (D2H) or reload (H2D) of a simulated schedule.")
      .def_prop_ro("kind", [](const Transfer& t) { return t.kind == Transfer::Kind::kOffload ? "offload" : "reload"; },
                   "'offload' or 'reload'.")
      .def_ro("device", &Transfer::device)
      .def_ro("group", &Transfer::group, "Index of the PCIe group whose channel carries it.")
      .def_ro("stage", &Transfer::stage)
      .def_ro("microbatch", &Transfer::mb)
      .def_ro("list_index", &Transfer::list_index, "Position of its F (offload) or R (reload) in the device's list.")
      .def_ro("fraction", &Transfer::r, "Offload level r.")
      .def_ro("bytes", &Transfer::bytes)
      .def_ro("request", &Transfer::request, "ms")
      .def_ro("start", &Transfer::start, "ms")
      .def_ro("end", &Transfer::end, "ms")
      .def_ro("started", &Transfer::started)
      .def_ro("finished", &Transfer::finished)
      .def("__repr__", [](const Transfer& t) {
        return std::string("<optpipe.Transfer ") + (t.kind == Transfer::Kind::kOffload ? "offload " : "reload ") +
               std::to_string(t.stage) + "." + std::to_string(t.mb) + " on device " + std::to_string(t.device) +
               ": " + fmt_ms(t.start) + " to " + fmt_ms(t.end) + ">";
      });

  nb::class_<SimResult>(m, "SimResult", "What simulating a schedule gives (spec §4): times, memory, feasibility.")
      .def_ro("feasible", &SimResult::feasible, "True when the timing completes within every memory limit.")
      .def_prop_ro("reason", [](const SimResult& r) { return r.feasible ? std::nullopt : std::optional(r.reason); },
                   "Why it deadlocked (None when feasible).")
      .def_ro("makespan", &SimResult::makespan, "ms: the latest end of a compute action (infeasible: of those that ran).")
      .def_prop_ro("bubble", [](const SimResult& r) { return std::isnan(r.bubble) ? std::nullopt : std::optional(r.bubble); },
                   "1 - sum(busy) / (devices x makespan); None when infeasible.")
      .def_ro("busy", &SimResult::busy, "ms of compute per device.")
      .def_ro("peak_memory", &SimResult::peak_memory, "Peak bytes per device, static memory included.")
      .def_ro("stop_time", &SimResult::stop_time, "ms: when an infeasible simulation stopped.")
      .def_prop_ro("timeline", &timeline,
                   "Per device, per list entry: (start, end) in ms, or None for an entry that never ran\n"
                   "(an R's start and end are the time it was requested). Empty unless recorded.")
      .def_ro("transfers", &SimResult::transfers, "Every offload and reload, in request order (when recorded).")
      .def_prop_ro("channels", &channel_loads,
                   "How busy each PCIe channel was: two ChannelLoad per group, D2H then H2D (from the\n"
                   "transfers: all zero unless the timeline was recorded).")
      .def_prop_ro("memory", &memory_curves,
                   "Per device, the memory step curve: (time ms, bytes from then on) (when recorded).")
      .def("__repr__", &describe);

  nb::class_<Violation>(m, "Violation", "A broken rule of spec §3 (or a deadlock), where it is and why.")
      .def_prop_ro("rule", [](const Violation& v) { return std::string(to_string(v.rule)); },
                   "The rule's name: 'fifo', 'duplicate', 'missing', 'reload-order', 'deadlock', ...")
      .def_ro("message", &Violation::message, "One line naming the device, the position and the action.")
      .def_prop_ro("device", [](const Violation& v) { return unless_negative(v.device); },
                   "The device of the entry it is about (None: about no single entry, e.g. a missing op).")
      .def_prop_ro("position", [](const Violation& v) { return unless_negative(v.position); },
                   "The entry's index in that device's list (None as above).")
      .def("__repr__", [](const Violation& v) { return "<optpipe.Violation [" + std::string(to_string(v.rule)) + "] " + v.message + ">"; })
      .def("__str__", [](const Violation& v) { return "[" + std::string(to_string(v.rule)) + "] " + v.message; });

  m.def(
      "simulate",
      [](const Instance& inst, const Schedule& sch, bool timeline, bool memory, bool enforce_memory_limit) {
        require_structure(inst, sch);
        SimOptions o;
        o.record_timeline = timeline;
        o.record_memory = memory;
        o.enforce_memory_limit = enforce_memory_limit;
        nb::gil_scoped_release release;
        return simulate(inst, sch, o);
      },
      nb::arg("instance"), nb::arg("schedule"), nb::kw_only(), nb::arg("timeline") = true, nb::arg("memory") = true,
      nb::arg("enforce_memory_limit") = true,
      "Simulates `schedule` on `instance` with the spec's timing: makespan, bubble, busy time and peak\n"
      "memory per device, and (unless turned off) the timeline, the transfers and the memory curves.\n"
      "A deadlock is a result with feasible False and a reason. enforce_memory_limit=False never waits\n"
      "for memory (peaks as if unlimited). Raises InputError when the lists break a structural rule.");

  m.def(
      "validate",
      [](const Instance& inst, const Schedule& sch) {
        nb::gil_scoped_release release;
        return validate(inst, sch, SimOptions::quiet()).violations;
      },
      nb::arg("instance"), nb::arg("schedule"),
      "Checks `schedule` against every rule of spec §3 on `instance`: the list of violations (at most 50\n"
      "structural ones; a deadlock is checked only when the lists are well formed). Empty: valid.");

  m.def(
      "render_svg",
      [](const Instance& inst, const Schedule& sch, int width, const std::string& title, bool memory, bool transfers,
         bool script) {
        require_structure(inst, sch);
        if (width != 0 && (width < 300 || width > 20000)) {  // as `optpipe render --width`; 0: from the ops
          throw InputError("width: must be 300 to 20000 pixels (or 0: from the ops), got " + std::to_string(width));
        }
        nb::gil_scoped_release release;
        const SimResult sim = simulate(inst, sch);
        SvgGanttOptions o;
        o.width = width;
        o.title = title;
        o.memory = memory;
        o.transfers = transfers;
        o.script = script;
        return render_svg_gantt(inst, sch, sim, o);
      },
      nb::arg("instance"), nb::arg("schedule"), nb::kw_only(), nb::arg("width") = 0, nb::arg("title") = "",
      nb::arg("memory") = true, nb::arg("transfers") = true, nb::arg("script") = true,
      "An SVG Gantt chart of the simulated schedule (what `optpipe render` writes): one row per GPU,\n"
      "as wide as its ops need for their microbatch numbers (width=0) or `width` px;\n"
      "offload and reload lanes, the memory curve against the limit. An infeasible schedule shows what\n"
      "ran and why it stopped. `script`: the inline script for pan, time zoom and labels that stay in\n"
      "view when the file is opened in a browser.");
}

}  // namespace optpipe::python
