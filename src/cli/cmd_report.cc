// attngeom report RUN_DIR... --out FILE.html [--title T]: one self-contained HTML
// report from one or more run directories, curves overlaid and labelled by run.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "report/report.h"
#include "util/version.h"

namespace attngeom::cli {

namespace {

struct ReportCommandOptions {
  std::vector<std::string> run_dirs;
  std::string out;
  std::string title;
};

}  // namespace

void add_report_command(CLI::App& app) {
  auto o = std::make_shared<ReportCommandOptions>();
  CLI::App* cmd =
      app.add_subcommand("report", "Render one self-contained HTML report from one or more run directories");
  cmd->add_option("run_dirs", o->run_dirs,
                  "run directories written by `attngeom analyze` (several: overlaid, labelled by run)")
      ->required();
  cmd->add_option("--out", o->out, "output .html file")->check(non_empty())->required();
  cmd->add_option("--title", o->title, "report heading (default: \"attngeom report:\" and the run labels)");
  cmd->callback([o] {
    ReportOptions options;
    options.title = o->title;
    options.generator = std::string("attngeom ") + kVersion + " (" + kGitCommit + ")";
    const std::vector<std::filesystem::path> dirs(o->run_dirs.begin(), o->run_dirs.end());
    write_report(dirs, o->out, options);
    std::printf("wrote %s (%zu run%s)\n", o->out.c_str(), dirs.size(), dirs.size() == 1 ? "" : "s");
  });
}

}  // namespace attngeom::cli
