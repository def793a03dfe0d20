#include "cli/mpi_analyze.h"

#include <unistd.h>

#include <cstdio>
#include <exception>

#include "cli/commands.h"
#include "cli/failure.h"
#include "cluster/mpi_job.h"

namespace attngeom::cli {

void analyze_as_mpi_rank(const AnalysisSettings& settings, int launched_ranks,
                         const std::function<void(const AnalysisOutcome&)>& finish) {
  cluster::MpiJob job(launched_ranks);
  try {
    // No stop on SIGINT/SIGTERM: mpirun answers Ctrl-C by ending every rank, and the records
    // rank 0 has written stay for --resume. Warnings come from rank 0 alone, once per job.
    const bool first = job.rank() == 0;
    const RunControl control{nullptr, first ? show_analyze_progress : std::function<void(const ProgressUpdate&)>(),
                             first ? warn_analyze : std::function<void(const SettingMessage&)>(), &job,
                             show_analyze_start};
    const AnalysisOutcome outcome = run_analysis(settings, control);
    if (first) finish(outcome);
  } catch (const std::exception&) {
    const Failure failure = describe_failure(std::current_exception());
    std::fprintf(stderr, "attngeom: MPI rank %d of %d failed: %s%s\n", job.rank(), job.size(),
                 failure.internal ? "internal error: " : "", failure.message.c_str());
    job.abort(failure.exit_code);
  }
}

}  // namespace attngeom::cli
