// Python objects <-> nlohmann::json, for the file-form methods (from_dict, to_dict): the
// documents themselves are read and written by model/instance_io.h and model/schedule_io.h,
// which name the field path of every error; this file only changes the representation.
#include <cstdint>
#include <string>

#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/string.h>

#include "model/error.h"
#include "python/src/bindings.h"

namespace optpipe::python {

using nlohmann::json;

nb::object to_python(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return nb::none();
    case json::value_t::boolean:
      return nb::bool_(v.get<bool>());
    case json::value_t::number_integer:
      return nb::int_(v.get<std::int64_t>());
    case json::value_t::number_unsigned:
      return nb::int_(v.get<std::uint64_t>());
    case json::value_t::number_float:
      return nb::float_(v.get<double>());
    case json::value_t::string: {
      const std::string& s = v.get_ref<const std::string&>();
      return nb::str(s.data(), s.size());
    }
    case json::value_t::array: {
      nb::list out;
      for (const json& e : v) out.append(to_python(e));
      return out;
    }
    case json::value_t::object: {
      nb::dict out;
      for (const auto& [key, e] : v.items()) out[nb::str(key.data(), key.size())] = to_python(e);
      return out;
    }
    default:  // binary, discarded: never produced by the writers
      return nb::none();
  }
}

JsonDict to_dict(const json& object) { return JsonDict(nb::borrow<nb::dict>(to_python(object))); }

namespace {

std::string at(const std::string& path) { return path.empty() ? "the document" : path; }

}  // namespace

json from_python(nb::handle h, const std::string& path) {
  if (h.is_none()) return nullptr;
  if (nb::isinstance<nb::bool_>(h)) return nb::cast<bool>(h);
  if (nb::isinstance<nb::str>(h)) return nb::cast<std::string>(h);
  if (nb::isinstance<nb::dict>(h)) {
    json out = json::object();
    for (auto [key, value] : nb::borrow<nb::dict>(h)) {
      if (!nb::isinstance<nb::str>(key)) {
        throw InputError(at(path) + ": keys must be str, got " + python_type_name(key) + " " +
                         nb::cast<std::string>(nb::repr(key)));
      }
      const std::string k = nb::cast<std::string>(key);
      out[k] = from_python(value, path.empty() ? k : path + "." + k);
    }
    return out;
  }
  if (nb::isinstance<nb::list>(h) || nb::isinstance<nb::tuple>(h)) {
    json out = json::array();
    std::size_t i = 0;
    for (nb::handle item : h) {
      out.push_back(from_python(item, path + "[" + std::to_string(i) + "]"));
      ++i;
    }
    return out;
  }
  if (PyIndex_Check(h.ptr())) {  // int, numpy integers
    nb::object index = nb::steal(PyNumber_Index(h.ptr()));
    if (!index.is_valid()) throw nb::python_error();
    std::int64_t value = 0;
    if (nb::try_cast(index, value)) return value;
    std::uint64_t unsigned_value = 0;
    if (nb::try_cast(index, unsigned_value)) return unsigned_value;
    throw InputError(at(path) + ": " + nb::cast<std::string>(nb::str(index)) + " is too large for a JSON integer");
  }
  if (nb::isinstance<nb::float_>(h) || nb::hasattr(h, "__float__")) {  // float, numpy floats
    nb::object value = nb::steal(PyNumber_Float(h.ptr()));
    if (!value.is_valid()) throw nb::python_error();
    return nb::cast<double>(value);
  }
  throw InputError(at(path) + ": a " + python_type_name(h) +
                   " is not a JSON value (use dict, list, tuple, str, int, float, bool or None)");
}

void warn(const std::string& message) {
  if (PyErr_WarnEx(PyExc_UserWarning, message.c_str(), 1) != 0) throw nb::python_error();
}

std::string path_text(const std::filesystem::path& path) { return path.string(); }

std::string python_type_name(nb::handle value) {
  nb::handle type = value.type();
  const std::string module = nb::cast<std::string>(type.attr("__module__"));
  const std::string name = nb::cast<std::string>(type.attr("__qualname__"));
  return module == "builtins" ? name : module + "." + name;
}

}  // namespace optpipe::python
