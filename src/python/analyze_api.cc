// attngeom.analyze: the main job (analysis/pipeline.h) with the CLI's settings as keyword
// arguments: the option table's (analysis/option_table.h) and those whose Python form differs
// from the flag's, each checked as the CLI checks its flag; an unknown name is a TypeError
// naming it. The run's warnings are Python warnings, its progress goes to sys.stderr or a callable
// (python_progress.h).
#include <pybind11/stl.h>

#include <cmath>
#include <functional>
#include <map>
#include <string>

#include "analysis/option_table.h"
#include "analysis/pipeline.h"
#include "analysis/progress.h"
#include "analysis/provenance.h"
#include "model/engine.h"
#include "python/bindings.h"
#include "python/interrupt.h"
#include "python/option_args.h"
#include "python/python_progress.h"
#include "report/report.h"
#include "util/error.h"
#include "util/near_name.h"

namespace attngeom::python {
namespace {

namespace py = pybind11;

struct PythonSettings {
  AnalysisSettings analysis;
  std::string precision = "auto", fp32_matmul = "sgemm", device = "cpu";
  int threads = 0;
  bool resume = false, overwrite = false;
  PythonProgress progress;
};

using Setter = std::function<void(PythonSettings&, const std::string&, const py::handle&)>;

// analyze's settings beyond the option table (their Python form differs from the flag's),
// each checked as its CLI flag is.
const std::map<std::string, Setter>& own_settings() {
  static const std::map<std::string, Setter> setters = {
      {"format",
       [](PythonSettings& s, const std::string& n, const py::handle& v) {
         s.analysis.corpus.format = parse_corpus_format(one_of(n, v, {"text", "lines", "jsonl"}));
       }},
      {"text_field", [](PythonSettings& s, const std::string& n,
                        const py::handle& v) { s.analysis.corpus.text_field = value_of<std::string>(n, v); }},
      {"lengths",
       [](PythonSettings& s, const std::string& n, const py::handle& v) {
         if (!py::isinstance<py::iterable>(v) || py::isinstance<py::str>(v)) {
           throw py::type_error(n + ": expected a list of sequence lengths");
         }
         for (const py::handle item : py::reinterpret_borrow<py::iterable>(v)) {
           const int length = static_cast<int>(integer_in(n, item, 2, 1LL << 20));
           if (std::find(s.analysis.lengths.begin(), s.analysis.lengths.end(), length) != s.analysis.lengths.end()) {
             throw SettingError({setting(n), ": " + std::to_string(length) + " appears twice"});
           }
           s.analysis.lengths.push_back(length);
         }
         std::sort(s.analysis.lengths.begin(), s.analysis.lengths.end());
       }},
      {"resume", [](PythonSettings& s, const std::string& n, const py::handle& v) { s.resume = value_of<bool>(n, v); }},
      {"overwrite",
       [](PythonSettings& s, const std::string& n, const py::handle& v) { s.overwrite = value_of<bool>(n, v); }},
      {"shard",
       [](PythonSettings& s, const std::string& n, const py::handle& v) {
         if (!py::isinstance<py::sequence>(v) || py::isinstance<py::str>(v) || py::len(v) != 2) {
           throw py::type_error(n + ": expected (i, n), shard i of n");
         }
         const auto pair = py::reinterpret_borrow<py::sequence>(v);
         s.analysis.shard_count = static_cast<int>(integer_in(n, pair[1], 1, 1LL << 30));
         s.analysis.shard_index = static_cast<int>(integer_in(n, pair[0], 0, s.analysis.shard_count - 1));
       }},
      {"resource_check", [](PythonSettings& s, const std::string& n,
                            const py::handle& v) { s.analysis.check_resources = value_of<bool>(n, v); }},
      {"memory_check",
       [](PythonSettings& s, const std::string& n, const py::handle& v) {
         const std::string check = one_of(n, v, {"strict", "warn", "off"});
         s.analysis.memory_check = check == "strict" ? MemoryCheck::kStrict
                                   : check == "off"  ? MemoryCheck::kOff
                                                     : MemoryCheck::kWarn;
       }},
      {"quiet",
       [](PythonSettings& s, const std::string& n, const py::handle& v) { s.progress.quiet = value_of<bool>(n, v); }},
      {"progress", [](PythonSettings& s, const std::string& n,
                      const py::handle& v) { s.progress.callback = progress_callback(n, v); }},
      {"precision",
       [](PythonSettings& s, const std::string& n, const py::handle& v) { s.precision = value_of<std::string>(n, v); }},
      {"fp32_matmul", [](PythonSettings& s, const std::string& n,
                         const py::handle& v) { s.fp32_matmul = value_of<std::string>(n, v); }},
      {"device",
       [](PythonSettings& s, const std::string& n, const py::handle& v) { s.device = value_of<std::string>(n, v); }},
      {"threads", [](PythonSettings& s, const std::string& n,
                     const py::handle& v) { s.threads = static_cast<int>(integer_in(n, v, 1, 1024)); }},
  };
  return setters;
}

// Every keyword analyze takes.
std::vector<std::string> analyze_keyword_names() {
  std::vector<std::string> names;
  for (const auto& [name, setter] : own_settings()) names.push_back(name);
  for (const OptionSpec& spec : analysis_option_table()) {
    if (!spec.help.empty()) names.emplace_back(spec.name);
  }
  return names;
}

PythonSettings settings_of(const py::dict& options) {
  PythonSettings s;
  const OptionTarget target = option_target(s.analysis);
  for (const auto& [key, value] : options) {
    const auto name = key.cast<std::string>();
    if (value.is_none()) continue;  // None: the default
    if (const auto it = own_settings().find(name); it != own_settings().end()) {
      it->second(s, name, value);
      continue;
    }
    const auto table = analysis_option_table();
    const auto spec = std::find_if(table.begin(), table.end(), [&](const OptionSpec& o) { return o.name == name; });
    if (spec == table.end() || spec->help.empty()) {
      throw py::type_error("analyze() got an unexpected keyword argument '" + name + "'" +
                           near_name_suggestion(name, analyze_keyword_names()));
    }
    set_table_option(*spec, target, value);
  }
  if (s.resume && s.overwrite)
    throw SettingError({setting("resume"), " and ", setting("overwrite"), " cannot be combined"});
  return s;
}

void analyze(const std::string& model_dir, const std::vector<std::string>& data, const std::string& out,
             const py::dict& options) {
  PythonSettings s = settings_of(options);
  AnalysisSettings& a = s.analysis;
  a.model_dir = model_dir;
  a.data = data;
  a.out = out;
  if (!options.contains("format") || options["format"].is_none()) {
    a.corpus.format = infer_corpus_format(data, CorpusFormat::kText);
  }
  a.mode = s.resume ? RunDirMode::kResume : s.overwrite ? RunDirMode::kOverwrite : RunDirMode::kCreate;
  const ComputeChoice compute = choose_compute(s.device, s.precision, s.fp32_matmul);
  if (!compute.warning.empty()) warn_in_python(compute.warning);
  a.device = compute.options.device;
  a.gpu = compute.options.gpu;
  a.precision = compute.options.precision;
  a.fp32_matmul = compute.options.fp32_matmul;
  run_interruptibly(
      [&](const std::atomic<bool>& stop) {
        const RunControl control{&stop, progress_sink(s.progress),
                                 [](const SettingMessage& message) { warn_in_python(message.plain()); }, nullptr,
                                 start_sink(s.progress)};
        if (!run_analysis(a, control).complete) return;  // stopped: the caller raises KeyboardInterrupt
        write_run_report(a.out);
      },
      s.threads);
}

}  // namespace

void write_run_report(const std::filesystem::path& run) {
  ReportOptions report;
  report.generator = "attngeom " + tool_provenance()["version"].get<std::string>() + " (" +
                     tool_provenance()["git_commit"].get<std::string>() + ")";
  write_report({run}, run / "report.html", report);
}

void warn_in_python(const std::string& text) {
  const py::gil_scoped_acquire gil;
  if (PyErr_WarnEx(PyExc_UserWarning, text.c_str(), 1) != 0) throw py::error_already_set();
}

void bind_analyze(py::module_& m) {
  m.def("_analyze", &analyze, py::arg("model"), py::arg("data"), py::arg("out"), py::arg("options"));
  m.def("_option_names", &analyze_keyword_names);
}

}  // namespace attngeom::python
