#pragma once
// Bring your own tensors: capture dumps (ours, or any tool's in the same layout, see
// README "The capture dump") analysed exactly like a live run. Each dump is one
// sequence, numbered in the order given.
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "analysis/pipeline.h"

namespace attngeom {

struct DumpAnalysisSettings {
  std::vector<std::filesystem::path> dumps;
  std::filesystem::path out;
  std::string label;
  bool per_sequence = false;
  RunDirMode mode = RunDirMode::kCreate;
  geometry::RowAnalysisOptions row;
  AggregateOptions aggregate;
};

// `warn` receives what cannot be an error (a previous run that could not be restored).
void run_dump_analysis(const DumpAnalysisSettings& settings, const std::function<void(const std::string&)>& warn);

// attn [H, Q, T]: each (head, row) must be a causal distribution over keys 0..q (finite, in
// [0, 1], zero after q, summing to 1); else InputError "<subject> head h, query position q: ...".
void check_attention_rows(std::span<const float> attn, std::span<const int> query_positions, std::size_t seq,
                          const std::string& subject);

}  // namespace attngeom
