// What the Python module's sources (python/src/) share: one bind_* function per concept, each in
// its own file, and the few conversions between Python objects and the library's types that
// more than one of them needs. The module is a thin layer: every function calls the C++
// libraries (model/, heuristics/, solve/, viz/, instances/generator/) and converts the result.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>

#include <nanobind/nanobind.h>
#include <nlohmann/json.hpp>

#include "model/instance.h"
#include "model/schedule.h"

namespace optpipe::python {

namespace nb = nanobind;

// Raised (as optpipe.InfeasibleError, a RuntimeError) when no schedule can be had: schedule()
// when no heuristic fits, with every heuristic's reason.
class NoSchedule : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A document as Python sees it (the stubs say dict[str, Any]).
using JsonDict = nb::typed<nb::dict, nb::str, nb::any>;
// The argument that takes one (converted by from_python, which names the bad field).
using JsonDictArg = nb::typed<nb::handle, JsonDict>;

// A JSON value as Python objects (dict, list, str, int, float, bool, None).
nb::object to_python(const nlohmann::json& value);
// A JSON object as a dict.
JsonDict to_dict(const nlohmann::json& object);
// Python objects as a JSON value. Dicts (with str keys), lists, tuples, str, int (and anything
// with __index__), float (and anything with __float__), bool and None; anything else is an
// InputError naming `path` (a field path such as "stages[3].forward") and the type.
nlohmann::json from_python(nb::handle value, const std::string& path);
// Emits a Python UserWarning (raises if warnings are turned into errors).
void warn(const std::string& message);
// A path argument (str or os.PathLike) as the libraries take it.
std::string path_text(const std::filesystem::path& path);
// The Python type name of `value`, for messages ("numpy.ndarray").
std::string python_type_name(nb::handle value);
// "optpipe 0.1.0 (29313a3)": the build, as `optpipe --version` names it; the schedule cache
// records it with every entry.
std::string build_string();

void bind_instance(nb::module_& m);
void bind_schedule(nb::module_& m);
void bind_simulate(nb::module_& m);    // simulate(), validate(), render_svg() and their results
void bind_heuristics(nb::module_& m);  // schedule(), heuristics()
void bind_solve(nb::module_& m);       // solve() and its result
void bind_generate(nb::module_& m);

}  // namespace optpipe::python
