#pragma once
// analyze, as a library call: checkpoint + corpus -> per-sequence records -> tables.
// The CLI (analyze, demo) and Python only fill AnalysisSettings (analysis/settings.h). The
// pipeline orchestrates its modules: length_plan (sequences and rows), preflight (memory and
// disk), run_json, job_exchange (MPI), length_sweep and run_readback (resume).
#include <cstddef>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "analysis/aggregate.h"
#include "analysis/run_control.h"
#include "analysis/settings.h"

namespace attngeom {

// The run's sequences (a shard's); on a rank other than 0 of an MPI job, that rank's own.
struct AnalysisOutcome {
  bool complete = false;  // false when stopped early; the run directory is resumable
  std::size_t sequences_done = 0;
  std::size_t sequences_total = 0;
};

AnalysisOutcome run_analysis(const AnalysisSettings& settings, const RunControl& control);

// Aggregates whatever records `dir` holds and (re)writes its tables.
RunAggregate finish_run_dir(const std::filesystem::path& dir, int kv_heads, const AggregateOptions& options,
                            bool per_sequence);

// run.json's "taxonomy": the k-means cross-check's agreement with the rule labels
// (docs/method.md section 6) over the heads the rules label; null agreement when they label none.
nlohmann::json taxonomy_json(const RunAggregate& run);

}  // namespace attngeom
