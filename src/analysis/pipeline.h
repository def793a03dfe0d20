#pragma once
// analyze, as a library call: checkpoint + corpus -> per-sequence records -> tables.
// The CLI (analyze, demo) only fills AnalysisSettings.
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "analysis/aggregate.h"
#include "analysis/job_ranks.h"
#include "analysis/resources.h"
#include "analysis/run_dir.h"
#include "capture/query_rows.h"
#include "corpus/documents.h"
#include "geometry/row_analysis.h"
#include "ops/gemm.h"

namespace attngeom {

struct AnalysisSettings {
  std::filesystem::path model_dir;
  std::vector<std::string> data;  // corpus files or folders
  CorpusOptions corpus;
  std::filesystem::path out;
  std::string label;  // default: the output directory's name
  int seq_len = 256;
  std::vector<int> lengths;  // extra sequence lengths for the sweep (RUN_DIR/lengths/L)
  int num_seqs = 16;
  int skip = 0;
  std::optional<std::uint64_t> shuffle_seed;
  bool pack = false;
  bool pack_bos = true;  // --pack-separator bos (default) or none
  QuerySelection queries;
  bool per_sequence = false;
  RunDirMode mode = RunDirMode::kCreate;
  int shard_index = 0;
  int shard_count = 1;
  Precision precision = Precision::kFp32;
  Fp32Matmul fp32_matmul = Fp32Matmul::kSgemm;
  bool force = false;                             // allow seq_len beyond max_position_embeddings
  bool check_resources = true;                    // pre-flight: fail early when memory or disk will not suffice
  MemoryCheck memory_check = MemoryCheck::kWarn;  // weights beyond the memory limit: refuse, warn or ignore
  geometry::RowAnalysisOptions row;
  AggregateOptions aggregate;
};

struct RunControl {
  const std::atomic<bool>* stop = nullptr;          // stops a run between sequences (set from a signal handler)
  bool progress_bar = false;                        // else plain log lines
  std::function<void(const SettingMessage&)> warn;  // e.g. fewer sequences than asked for; null: none shown
  JobRanks* ranks = nullptr;                        // this process's part of an MPI job; null: alone
};

// The run's sequences (a shard's); on a rank other than 0 of an MPI job, that rank's own.
struct AnalysisOutcome {
  bool complete = false;  // false when stopped early; the run directory is resumable
  std::size_t sequences_done = 0;
  std::size_t sequences_total = 0;
};

// The options that shape every record (part of the settings a resumed run must share).
nlohmann::json record_options_json(const geometry::RowAnalysisOptions& row, const AggregateOptions& aggregate);
// run.json "options": the record options, and the tables' own (taxonomy thresholds, flags),
// which a resumed run may change since the tables are rewritten from the records.
nlohmann::json options_json(const geometry::RowAnalysisOptions& row, const AggregateOptions& aggregate);

// The resolved settings that must match for --resume (everything that changes results).
nlohmann::json settings_json(const AnalysisSettings& settings);

AnalysisOutcome run_analysis(const AnalysisSettings& settings, const RunControl& control);

// RUN_DIR `out`/length_sweep.csv from a length sweep's run directories, (seq_len, dir) each.
void write_length_sweep(const std::filesystem::path& out, const AggregateOptions& options,
                        const std::vector<std::pair<int, std::filesystem::path>>& runs, int kv_heads);

// The aggregation options a run was made with, from its run.json: the stats seed and
// bootstrap of `settings`, the taxonomy thresholds and flags of `options` (defaults where
// an older run lacks them). Throws InputError for a value that is not a number.
AggregateOptions aggregate_options_of_run(const nlohmann::json& run, const std::filesystem::path& dir);

// Aggregates whatever records `dir` holds and (re)writes its tables.
RunAggregate finish_run_dir(const std::filesystem::path& dir, int kv_heads, const AggregateOptions& options,
                            bool per_sequence);

// run.json's "taxonomy": the k-means cross-check's agreement with the rule labels
// (docs/method.md section 6) over the heads the rules label; null agreement when they label none.
nlohmann::json taxonomy_json(const RunAggregate& run);

}  // namespace attngeom
