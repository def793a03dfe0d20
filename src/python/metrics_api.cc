// attngeom.metrics: `attngeom metrics` (analysis/dump_input.h) on capture dumps, with the
// geometry and table settings analyze takes as keyword arguments, then the run's report.
#include <pybind11/stl.h>

#include <map>
#include <string>
#include <vector>

#include "analysis/dump_input.h"
#include "python/bindings.h"
#include "python/interrupt.h"
#include "python/option_args.h"
#include "util/error.h"

namespace attngeom::python {
namespace {

namespace py = pybind11;

struct MetricsCall {
  DumpAnalysisSettings settings;
  bool overwrite = false;
  int threads = 0;
};

// metrics' own keywords beyond the geometry options.
std::map<std::string, KeywordSetter> own_keywords(MetricsCall& call) {
  return {
      {"label", [&](const std::string& n, const py::handle& v) { call.settings.label = value_of<std::string>(n, v); }},
      {"overwrite", [&](const std::string& n, const py::handle& v) { call.overwrite = value_of<bool>(n, v); }},
      {"threads",
       [&](const std::string& n, const py::handle& v) { call.threads = static_cast<int>(integer_in(n, v, 1, 1024)); }},
  };
}

MetricsCall call_of(const py::dict& options) {
  MetricsCall call;
  DumpAnalysisSettings& s = call.settings;
  set_keywords("metrics", options, own_keywords(call), {s.row, s.aggregate, nullptr, &s.per_sequence});
  return call;
}

std::vector<std::string> metrics_keyword_names() {
  MetricsCall call;
  return keyword_names(own_keywords(call));
}

void metrics(const std::vector<std::string>& dumps, const std::string& out, const py::dict& options) {
  MetricsCall call = call_of(options);
  DumpAnalysisSettings& s = call.settings;
  if (dumps.empty()) throw SettingError({setting("dumps"), ": expected at least one capture dump"});
  for (const std::string& dump : dumps) s.dumps.emplace_back(dump);
  s.out = out;
  s.mode = call.overwrite ? RunDirMode::kOverwrite : RunDirMode::kCreate;
  run_interruptibly(
      [&](const std::atomic<bool>&) {
        run_dump_analysis(s, warn_in_python);
        write_run_report(s.out);
      },
      call.threads);
}

}  // namespace

void bind_metrics(py::module_& m) {
  m.def("_metrics", &metrics, py::arg("dumps"), py::arg("out"), py::arg("options"));
  m.def("_metrics_option_names", &metrics_keyword_names);
}

}  // namespace attngeom::python
