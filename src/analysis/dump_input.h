#pragma once
// Bring your own tensors: capture dumps (ours, or any tool's in the same layout, see
// README "The capture dump") analysed exactly like a live run. Each dump is one
// sequence, numbered in the order given.
#include <filesystem>
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

void run_dump_analysis(const DumpAnalysisSettings& settings);

}  // namespace attngeom
