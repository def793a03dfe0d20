// The report every command that finishes a run directory writes into it (analyze, demo,
// metrics, merge, and prune on a run directory).
#include <string>

#include "analysis/provenance.h"
#include "cli/commands.h"
#include "report/report.h"

namespace attngeom::cli {

void write_run_report(const std::filesystem::path& dir) {
  ReportOptions options;
  options.generator = std::string("attngeom ") + tool_provenance()["version"].get<std::string>() + " (" +
                      tool_provenance()["git_commit"].get<std::string>() + ")";
  write_report({dir}, dir / "report.html", options);
}

}  // namespace attngeom::cli
