// optpipe.Schedule: every device's list of actions (model/schedule.h), with the informational
// fields a schedule file may carry (makespan, status, bound, ...). Made from lists of action
// strings, a dict, JSON text or a file (model/schedule_io.h: errors name the place, e.g.
// devices[1][4]); immutable from Python like Instance. Whether it fits an instance is
// optpipe.validate()'s business.
#include <optional>
#include <string>
#include <vector>

#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "model/error.h"
#include "model/schedule_io.h"
#include "python/src/bindings.h"
#include "viz/text_report.h"

namespace optpipe::python {
namespace {

using nlohmann::json;

Schedule from_dict(JsonDictArg doc) {
  if (!nb::isinstance<nb::dict>(doc)) {
    throw InputError("schedule: expected a dict (an optpipe-schedule/1 document), got a " + python_type_name(doc));
  }
  return schedule_from_json(from_python(doc, ""));
}

// The lists as the document's "devices" field, so that errors name their place.
Schedule from_lists(nb::handle devices, const std::string& instance) {
  const json doc = {{"format", kScheduleFormat}, {"instance", instance}, {"devices", from_python(devices, "devices")}};
  return schedule_from_json(doc);
}

std::vector<std::vector<std::string>> action_lists(const Schedule& s) {
  std::vector<std::vector<std::string>> out(s.devices.size());
  for (std::size_t d = 0; d < s.devices.size(); ++d) {
    for (const Action& a : s.devices[d]) out[d].push_back(to_string(a));
  }
  return out;
}

std::optional<std::string> unless_empty(const std::string& s) {
  return s.empty() ? std::nullopt : std::optional<std::string>(s);
}

std::string describe(const Schedule& s) {
  std::string out = "<optpipe.Schedule";
  if (!s.instance.empty()) out += " of '" + s.instance + "'";
  out += ": " + std::to_string(s.num_devices()) + " devices, " + std::to_string(s.num_actions()) + " actions";
  if (s.makespan) out += ", makespan " + fmt_ms(*s.makespan);
  if (!s.status.empty()) out += ", " + s.status;
  return out + ">";
}

}  // namespace

void bind_schedule(nb::module_& m) {
  nb::class_<Schedule>(m, "Schedule",
                       "A schedule (spec §3): for every device, its ordered list of actions, as strings such as\n"
                       "'F3.7', 'F3.7@0.5' (offloads half of the activation), 'B3.7', 'W3.7', 'R3.7' (reload).\n"
                       "Immutable; informational fields (makespan, status, bound, ...) come from the solver or a file.")
      .def("__init__",
           [](Schedule* self, nb::typed<nb::handle, nb::typed<nb::sequence, nb::typed<nb::sequence, nb::str>>> devices,
              const std::string& instance) {
             new (self) Schedule(from_lists(devices, instance));
           },
           nb::arg("devices"), nb::arg("instance") = "",
           "A schedule from one list of action strings per device, e.g. [['F0.0', 'B0.0'], ...], for the\n"
           "instance named `instance`. Raises InputError naming the place of a bad action (devices[1][4]).")
      .def_static("from_dict", &from_dict, nb::arg("document"),
                  "The schedule of an optpipe-schedule/1 document given as a dict. Raises InputError.")
      .def_static("from_json", [](const std::string& text) { return parse_schedule(text); }, nb::arg("text"),
                  "The schedule of JSON text (a schedule file's content).")
      .def_static("from_file", [](const std::filesystem::path& p) { return load_schedule(path_text(p)); },
                  nb::arg("path"), "Reads a schedule file; errors name the file and the place.")
      .def("to_dict", [](const Schedule& s) { return to_dict(schedule_to_json(s)); },
           "The optpipe-schedule/1 document as a dict; Schedule.from_dict() of it gives this schedule back.")
      .def("to_json", [](const Schedule& s) { return schedule_to_text(s); },
           "The document as JSON text, one device list per line (what save() writes).")
      .def("save", [](const Schedule& s, const std::filesystem::path& p) { save_schedule(s, path_text(p)); },
           nb::arg("path"), "Writes the schedule file.")
      .def_prop_ro("instance", [](const Schedule& s) { return s.instance; }, "The instance's name.")
      .def_prop_ro("devices", &action_lists, "One list of action strings per device.")
      .def_prop_ro("num_devices", &Schedule::num_devices)
      .def_prop_ro("num_actions", &Schedule::num_actions)
      .def_prop_ro("has_offload", &Schedule::has_offload, "True when some forward offloads (F...@r with r > 0).")
      .def_prop_ro("makespan", [](const Schedule& s) { return s.makespan; }, "ms, as recorded (None: not recorded).")
      .def_prop_ro("bubble", [](const Schedule& s) { return s.bubble; })
      .def_prop_ro("bound", [](const Schedule& s) { return s.bound; }, "A proven lower bound on the optimum, ms.")
      .def_prop_ro("gap", [](const Schedule& s) { return s.gap; })
      .def_prop_ro("peak_memory", [](const Schedule& s) { return s.peak_memory; }, "Bytes per device, as recorded.")
      .def_prop_ro("status", [](const Schedule& s) { return unless_empty(s.status); },
                   "'optimal', 'feasible', 'infeasible' or None.")
      .def_prop_ro("solver", [](const Schedule& s) { return unless_empty(s.solver); },
                   "What made it (free text), or None.")
      .def("__eq__", [](const Schedule& a, const Schedule& b) { return schedule_to_json(a) == schedule_to_json(b); })
      .def("__repr__", &describe)
      .def("__getstate__", [](const Schedule& s) { return schedule_to_text(s); })
      .def("__setstate__", [](Schedule& self, const std::string& text) { new (&self) Schedule(parse_schedule(text)); });
}

}  // namespace optpipe::python
