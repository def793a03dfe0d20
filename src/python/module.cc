// _attngeom: the library's errors as Python exceptions with the CLI's one-line messages,
// settings named as the Python keyword arguments name them ("seq_len", not --seq-len).
#include <filesystem>
#include <new>

#include "python/bindings.h"
#include "util/error.h"
#include "util/version.h"

namespace py = pybind11;

PYBIND11_MODULE(_attngeom, m) {
  m.doc() = "attngeom's native engine; use the attngeom package, not this module";
  m.attr("__version__") = std::string(attngeom::kVersion);
  m.attr("git_commit") = std::string(attngeom::kGitCommit);
  py::register_exception_translator([](std::exception_ptr error) {
    try {
      if (error) std::rethrow_exception(error);
    } catch (const attngeom::MissingFileError& e) {
      PyErr_SetString(PyExc_FileNotFoundError, e.what());
    } catch (const attngeom::InputError& e) {  // SettingError too: what() names settings plainly
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const std::filesystem::filesystem_error& e) {
      PyErr_SetString(PyExc_OSError, attngeom::printable_message(e.what()).c_str());
    } catch (const std::bad_alloc&) {
      PyErr_SetString(PyExc_MemoryError,
                      "out of memory (try a smaller input: a shorter sequence, fewer query rows or values)");
    }
  });
  attngeom::python::bind_model(m);
  attngeom::python::bind_selection(m);
  attngeom::python::bind_analyze(m);
  attngeom::python::bind_metrics(m);
  attngeom::python::bind_run_feed(m);
}
