// attngeom.metrics: `attngeom metrics` (analysis/dump_input.h) on capture dumps, with the
// geometry and table settings analyze takes as keyword arguments, then the run's report.
#include <pybind11/stl.h>

#include <algorithm>
#include <string>
#include <vector>

#include "analysis/dump_input.h"
#include "python/bindings.h"
#include "python/interrupt.h"
#include "python/option_args.h"
#include "util/error.h"
#include "util/near_name.h"

namespace attngeom::python {
namespace {

namespace py = pybind11;

struct MetricsCall {
  DumpAnalysisSettings settings;
  bool overwrite = false;
  int threads = 0;
};

// The option table's entries that shape records and tables (not analyze's run-level ones).
std::vector<const OptionSpec*> geometry_options() {
  std::vector<const OptionSpec*> specs;
  for (const OptionSpec& spec : analysis_option_table()) {
    if (!spec.help.empty() && !is_run_level(spec.place)) specs.push_back(&spec);
  }
  return specs;
}

std::vector<std::string> keyword_names() {
  std::vector<std::string> names = {"label", "overwrite", "threads"};
  for (const OptionSpec* spec : geometry_options()) names.emplace_back(spec->name);
  return names;
}

MetricsCall call_of(const py::dict& options) {
  MetricsCall call;
  DumpAnalysisSettings& s = call.settings;
  const OptionTarget target{s.row, s.aggregate, nullptr, &s.per_sequence};
  const std::vector<const OptionSpec*> specs = geometry_options();
  for (const auto& [key, value] : options) {
    const auto name = key.cast<std::string>();
    if (value.is_none()) continue;  // None: the default
    if (name == "label") {
      s.label = value_of<std::string>(name, value);
    } else if (name == "overwrite") {
      call.overwrite = value_of<bool>(name, value);
    } else if (name == "threads") {
      call.threads = static_cast<int>(integer_in(name, value, 1, 1024));
    } else if (const auto spec =
                   std::find_if(specs.begin(), specs.end(), [&](const OptionSpec* o) { return o->name == name; });
               spec != specs.end()) {
      set_table_option(**spec, target, value);
    } else {
      throw py::type_error("metrics() got an unexpected keyword argument '" + name + "'" +
                           near_name_suggestion(name, keyword_names()));
    }
  }
  return call;
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
  m.def("_metrics_option_names", &keyword_names);
}

}  // namespace attngeom::python
