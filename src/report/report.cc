#include "report/report.h"

#include <algorithm>

#include "report/html.h"
#include "report/report_data.h"
#include "report/run_data.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/machine.h"

namespace attngeom {

namespace fs = std::filesystem;

namespace {

// Inside a run directory the report may only be RUN/report.html: any other path there is
// one of the run's own files (heads.csv, run.json, a record) or a folder of them.
void check_not_a_run_file(const fs::path& out, const std::vector<fs::path>& run_dirs) {
  const fs::path parent = fs::absolute(out).parent_path();
  for (const fs::path& dir : run_dirs) {
    std::error_code ec;
    const bool the_report = out.filename() == "report.html" && fs::equivalent(parent, dir, ec);
    if (lies_within(out, dir) && !the_report) {
      throw InputError("report --out " + out.string() + ": lies inside the run directory " + dir.string() + "; only " +
                       (dir / "report.html").string() + " may be written there");
    }
  }
}

// Each run once, and no report written into a run it does not draw (whose own report.html
// or files it would replace).
void check_runs_and_out(const fs::path& out, const std::vector<fs::path>& run_dirs) {
  if (const auto twice = repeated_path(run_dirs)) {
    throw InputError("report: " + run_dirs[twice->second].string() + ": run directory given twice");
  }
  std::error_code ec;
  const auto drawn = [&](const fs::path& dir) {
    return std::any_of(run_dirs.begin(), run_dirs.end(),
                       [&](const fs::path& run) { return fs::equivalent(dir, run, ec); });
  };
  for (fs::path dir = fs::absolute(out).parent_path(); !dir.empty(); dir = dir.parent_path()) {
    if (fs::is_regular_file(dir / "run.json", ec) && !drawn(dir)) {
      throw InputError("report --out " + out.string() + ": lies inside the run directory " + dir.string() +
                       ", which this report does not draw; expected a path outside it");
    }
    if (dir == dir.parent_path()) break;
  }
}

}  // namespace

void write_report(const std::vector<fs::path>& run_dirs, const fs::path& out, const ReportOptions& options) {
  check_output_path(out, out.empty() ? "report --out" : out.string(), "an .html file path");
  check_not_a_run_file(out, run_dirs);
  check_runs_and_out(out, run_dirs);
  if (options.run_notes.size() > run_dirs.size()) throw InputError("report: more run notes than run directories");

  const std::vector<report::RunData> runs = report::load_runs(run_dirs);
  report::DataOptions data_options{.title = options.title,
                                   .generator = options.generator,
                                   .generated = utc_timestamp(),
                                   .run_notes = options.run_notes};
  if (data_options.title.empty()) {
    data_options.title = "attngeom report:";
    for (std::size_t i = 0; i < runs.size(); ++i) data_options.title += (i ? ", " : " ") + runs[i].label;
  }
  if (data_options.generator.empty()) data_options.generator = "attngeom";
  const std::string html = report::render_html(report::build_report_data(runs, data_options));

  AtomicFile file(out);
  file.write_at(0, html.data(), html.size());
  file.commit();
}

}  // namespace attngeom
