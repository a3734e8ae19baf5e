// optpipe.Instance: a problem instance (model/instance.h), immutable from Python. Made from the
// file form (a dict, JSON text or a file: model/instance_io.h, whose errors name the field path)
// or by optpipe.generate(); read through properties and the file form again (to_dict, to_json,
// save). To change one, edit its dict and make a new one.
#include <string>
#include <vector>

#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "model/error.h"
#include "model/instance_io.h"
#include "python/src/bindings.h"
#include "viz/text_report.h"

namespace optpipe::python {
namespace {

using nlohmann::json;

Instance with_warnings(const std::vector<std::string>& warnings, Instance instance) {
  for (const auto& w : warnings) warn(w);
  return instance;
}

Instance from_dict(JsonDictArg doc) {
  if (!nb::isinstance<nb::dict>(doc)) {
    throw InputError("instance: expected a dict (an optpipe-instance/1 document), got a " + python_type_name(doc));
  }
  std::vector<std::string> warnings;
  Instance inst = instance_from_json(from_python(doc, ""), &warnings);
  return with_warnings(warnings, std::move(inst));
}

Instance from_json_text(const std::string& text) {
  std::vector<std::string> warnings;
  Instance inst = parse_instance(text, &warnings);
  return with_warnings(warnings, std::move(inst));
}

Instance from_file(const std::filesystem::path& path) {
  std::vector<std::string> warnings;
  Instance inst = load_instance(path_text(path), &warnings);
  return with_warnings(warnings, std::move(inst));
}

nb::typed<nb::list, JsonDict> dict_list(const json& array) {
  return nb::typed<nb::list, JsonDict>(nb::borrow<nb::list>(to_python(array)));
}

}  // namespace

void bind_instance(nb::module_& m) {
  nb::class_<Instance>(m, "Instance",
                       "A pipeline instance (spec §1-§2): devices, stages, microbatches. Immutable; make one with\n"
                       "Instance.from_dict / from_json / from_file or optpipe.generate(), and change one by editing\n"
                       "its to_dict() and making a new one.")
      .def_static("from_dict", &from_dict, nb::arg("document"),
                  "The instance of an optpipe-instance/1 document given as a dict (the JSON file's content).\n"
                  "Raises InputError naming the field path and the reason; questionable fields give a UserWarning.")
      .def_static("from_json", &from_json_text, nb::arg("text"), "The instance of JSON text (the file's content).")
      .def_static("from_file", &from_file, nb::arg("path"),
                  "Reads an instance file. Errors name the file, the field path and the reason.")
      .def("to_dict", [](const Instance& i) { return to_dict(instance_to_json(i)); },
           "The optpipe-instance/1 document as a dict; Instance.from_dict() of it gives this instance back.")
      .def("to_json", [](const Instance& i, int indent) { return instance_to_json(i).dump(indent); },
           nb::arg("indent") = 2, "The document as JSON text.")
      .def("save", [](const Instance& i, const std::filesystem::path& path) { save_instance(i, path_text(path)); },
           nb::arg("path"), "Writes the instance file (via a temporary file and a rename).")
      .def_prop_ro("name", [](const Instance& i) { return i.name; })
      .def_prop_ro("microbatches", [](const Instance& i) { return i.microbatches; })
      .def_prop_ro("split_backward", [](const Instance& i) { return i.split_backward; },
                   "True when the backward is split into B (inputs) and W (weights).")
      .def_prop_ro("offload_levels", [](const Instance& i) { return i.offload_levels; },
                   "The allowed offload fractions, ascending, always with 0.")
      .def_prop_ro("comm", [](const Instance& i) { return i.comm; },
                   "ms between stage s and s+1 as given (S-1 entries; 0 applies between stages on one device).")
      .def_prop_ro("num_devices", &Instance::num_devices)
      .def_prop_ro("num_stages", &Instance::num_stages)
      .def_prop_ro("devices", [](const Instance& i) { return dict_list(instance_to_json(i)["devices"]); },
                   "The devices as in the file: a dict each (memory_limit, static_memory, pcie_group).")
      .def_prop_ro("stages", [](const Instance& i) { return dict_list(instance_to_json(i)["stages"]); },
                   "The stages as in the file: a dict each (device, forward, backward, weight, activation, ...).")
      .def_prop_ro("placement", [](const Instance& i) { return std::string(to_string(i.placement())); },
                   "How stages sit on devices: 'one stage per device', 'V (two stages per device)', "
                   "'loop (interleaved)' or 'custom'.")
      .def_prop_ro("can_offload", &Instance::can_offload,
                   "True when some stage can offload and some offload level is above 0.")
      .def("__eq__", [](const Instance& a, const Instance& b) { return instance_to_json(a) == instance_to_json(b); })
      .def("__repr__", [](const Instance& i) { return "<optpipe.Instance " + describe_instance(i) + ">"; })
      .def("__getstate__", [](const Instance& i) { return instance_to_json(i).dump(); })
      .def("__setstate__", [](Instance& self, const std::string& text) { new (&self) Instance(parse_instance(text)); });
}

}  // namespace optpipe::python
