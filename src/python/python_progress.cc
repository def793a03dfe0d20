#include "python/python_progress.h"

#include "python/bindings.h"

namespace attngeom::python {

namespace py = pybind11;

namespace {

void print_to_stderr(const std::string& text) {
  const py::gil_scoped_acquire gil;
  py::print(text, py::arg("end") = "", py::arg("file") = py::module_::import("sys").attr("stderr"));
}

}  // namespace

py::object progress_callback(const std::string& name, const py::handle& value) {
  if (!value.is_none() && !PyCallable_Check(value.ptr())) {
    throw py::type_error(name + ": expected a callable (called with a dict after each sequence) or None, got " +
                         std::string(py::str(py::type::of(value).attr("__name__"))));
  }
  return py::reinterpret_borrow<py::object>(value);
}

std::function<void(const ProgressUpdate&)> progress_sink(const PythonProgress& progress) {
  if (!progress.callback.is_none()) {
    // The callable is held by `progress`, which outlives the run; it is called under the GIL.
    const py::object* callback = &progress.callback;
    return [callback](const ProgressUpdate& u) {
      if (u.layers > 0) return;  // the callable hears of finished sequences only
      const py::gil_scoped_acquire gil;
      py::dict update;
      update["done"] = u.done;
      update["total"] = u.total;
      update["tokens_per_s"] = u.tokens_per_s;
      update["eta_s"] = u.eta_s;
      (*callback)(update);
    };
  }
  if (progress.quiet) return {};
  return [](const ProgressUpdate& u) { print_to_stderr(progress_text(u, false)); };
}

std::function<void(const RunStart&)> start_sink(const PythonProgress& progress) {
  if (progress.quiet) return {};
  return [](const RunStart& start) {
    print_to_stderr(run_start_text(start));
    if (const auto warning = one_document_warning(start)) warn_in_python(warning->plain());
  };
}

}  // namespace attngeom::python
