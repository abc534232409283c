// The compiled part of the `gdp` package, gdp._core (python/gdp/__init__.py re-exports it):
// graphs, clusters, the simulator, every placer of the registry, features and the trainers'
// reward, with numpy arrays where arrays fit. API: docs/python.md.
//
// Errors: gdp's InputError (bad files, values, options; GraphError is the same type) raises
// gdp.InputError and UsageError (unknown method, bad usage) gdp.UsageError, both subclasses of
// gdp.Error, itself a ValueError; the message is the C++ one.
#include <pybind11/pybind11.h>

#include "convert.h"
#include "core/error.h"
#include "place/registry.h"
#include "rl/methods.h"

PYBIND11_MODULE(_core, m) {
  namespace pb = pybind11;
  m.doc() = "gdp's C++ library: graphs, clusters, simulator, placers, features (docs/python.md)";

  // Error(ValueError) <- InputError, UsageError.
  static pb::handle error = PyErr_NewExceptionWithDoc(
      "gdp.Error", "A gdp error (bad input or usage); a ValueError.", PyExc_ValueError, nullptr);
  m.attr("Error") = error;
  pb::register_exception<gdp::InputError>(m, "InputError", error.ptr());
  pb::register_exception<gdp::UsageError>(m, "UsageError", error.ptr());
  m.attr("GraphError") = m.attr("InputError");

  // The methods rl/ brings (gdp, gdp-anneal, hdp, placeto), as `gdp` does at start.
  gdp::rl::register_methods(gdp::place::registry());

  gdp::py::bind_graphs(m);
  gdp::py::bind_simulator(m);
  gdp::py::bind_placers(m);
  gdp::py::bind_features(m);
}
