#pragma once
// analyze's settings, typed: each front end (CLI, Python) fills them once, at its edge, and
// the option table (analysis/option_table.h) spells the ones both front ends share. The
// settings JSON is what run.json records and what a resumed run must match.
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "analysis/aggregate.h"
#include "analysis/resources.h"
#include "analysis/run_dir.h"
#include "capture/query_rows.h"
#include "corpus/documents.h"
#include "geometry/row_analysis.h"
#include "model/engine.h"
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
  Device device = Device::kCpu;
  int gpu = 0;  // kCuda: the GPU's ordinal (results do not depend on it)
  Precision precision = Precision::kFp32;
  Fp32Matmul fp32_matmul = Fp32Matmul::kSgemm;
  bool force = false;                             // allow seq_len beyond max_position_embeddings
  bool check_resources = true;                    // pre-flight: fail early when memory or disk will not suffice
  MemoryCheck memory_check = MemoryCheck::kWarn;  // weights beyond the memory limit: refuse, warn or ignore
  geometry::RowAnalysisOptions row;
  AggregateOptions aggregate;
};

// The options that shape every record (part of the settings a resumed run must share).
nlohmann::json record_options_json(const geometry::RowAnalysisOptions& row, const AggregateOptions& aggregate);
// run.json "options": the record options, and the tables' own (taxonomy thresholds, flags),
// which a resumed run may change since the tables are rewritten from the records.
nlohmann::json options_json(const geometry::RowAnalysisOptions& row, const AggregateOptions& aggregate);

// The resolved settings that must match for --resume (everything that changes results).
nlohmann::json settings_json(const AnalysisSettings& settings);

// The settings of one length's run directory: the run's, with that seq_len. Only the main
// directory keeps the sweep's lengths, so that resuming with other lengths is refused.
nlohmann::json length_settings_json(const AnalysisSettings& settings, int seq_len);

}  // namespace attngeom
