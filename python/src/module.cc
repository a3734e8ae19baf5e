// The extension module optpipe._optpipe: the exceptions, the version, and each concept's bindings
// (one file each: instance.cc, schedule.cc, simulate.cc, heuristics.cc, solve.cc, generate.cc).
// The package optpipe (python/optpipe/__init__.py) re-exports it.
//
// Errors: the libraries' InputError (model/error.h: a bad file, field or argument; the message
// names the field path and the reason) is optpipe.InputError, a ValueError; no fitting schedule
// from schedule() is optpipe.InfeasibleError, a RuntimeError; any other C++ exception is the
// Python exception nanobind maps it to (RuntimeError for std::exception), with its message.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "model/error.h"
#include "optpipe_build_id.h"  // generated (cmake/build_id.cmake)
#include "python/src/bindings.h"

#ifndef OPTPIPE_VERSION
#define OPTPIPE_VERSION "0.0.0"
#endif

namespace optpipe::python {

std::string build_string() { return std::string("optpipe ") + OPTPIPE_VERSION + " (" + OPTPIPE_BUILD_ID + ")"; }

}  // namespace optpipe::python

NB_MODULE(_optpipe, m) {
  namespace nb = nanobind;
  using namespace optpipe::python;
  m.doc() = "OptPipe's C++ core: pipeline-parallel training schedules that fit in memory (use the package optpipe).";
  nb::exception<optpipe::InputError>(m, "InputError", PyExc_ValueError);
  nb::exception<NoSchedule>(m, "InfeasibleError", PyExc_RuntimeError);
  m.attr("__version__") = OPTPIPE_VERSION;
  m.attr("build") = build_string();
  bind_instance(m);
  bind_schedule(m);
  bind_simulate(m);
  bind_heuristics(m);
  bind_solve(m);
  bind_generate(m);
}
