#pragma once
// How a long Python call reports: its start line and a line per finished sequence on
// sys.stderr, or each update handed to a callable, or nothing (quiet=True). Safe from a
// worker thread: each call takes the GIL.
#include <pybind11/pybind11.h>

#include <functional>

#include "analysis/progress.h"

namespace attngeom::python {

struct PythonProgress {
  bool quiet = false;  // no lines on sys.stderr
  pybind11::object callback =
      pybind11::none();  // None: lines; else called with {"done", "total", "tokens_per_s", "eta_s"}
};

// `value` (the keyword `name`) as the callback: None or a callable, else TypeError.
pybind11::object progress_callback(const std::string& name, const pybind11::handle& value);

// After each finished sequence: the callback, or a line unless quiet; null when neither.
std::function<void(const ProgressUpdate&)> progress_sink(const PythonProgress& progress);
// Once before the first sequence: the start line (and the one-document warning) unless quiet.
std::function<void(const RunStart&)> start_sink(const PythonProgress& progress);

}  // namespace attngeom::python
