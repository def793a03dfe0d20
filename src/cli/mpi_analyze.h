#pragma once
// analyze as one rank of an MPI job (docs/cluster.md "MPI"); built only with ATTNGEOM_MPI.
#include <functional>

#include "analysis/pipeline.h"

namespace attngeom::cli {

// Runs `settings` as this process's rank of the `launched_ranks` the launcher started; rank 0
// then calls `finish` with the job's outcome. A rank that fails prints one line naming itself
// and ends the whole job (MPI_Abort) with the exit code its error would have had alone.
void analyze_as_mpi_rank(const AnalysisSettings& settings, int launched_ranks,
                         const std::function<void(const AnalysisOutcome&)>& finish);

}  // namespace attngeom::cli
