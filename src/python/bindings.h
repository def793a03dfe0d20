#pragma once
// The compiled half of the attngeom Python package (python/attngeom/): each file binds one
// part of the API on the module `_attngeom`; the package's Python code shapes the arguments
// (numpy conversion, defaults) and documents them.
#include <pybind11/pybind11.h>

#include <filesystem>
#include <string>

namespace attngeom::python {

// A warning of the library (e.g. PrecisionChoice::warning) as a Python UserWarning, raised as
// an error where Python's filters say so. Safe from a worker thread: it takes the GIL.
void warn_in_python(const std::string& text);
// RUN/report.html of one run directory, as the CLI writes it.
void write_run_report(const std::filesystem::path& run);

void bind_model(pybind11::module_& m);
void bind_selection(pybind11::module_& m);
void bind_analyze(pybind11::module_& m);
void bind_metrics(pybind11::module_& m);
void bind_run_feed(pybind11::module_& m);

}  // namespace attngeom::python
