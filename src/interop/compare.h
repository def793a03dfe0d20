#pragma once
// How another tool's head set relates to a run's types and scores (docs/method.md section 6,
// "Head sets of other tools"): one row per (file, ours).
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "interop/head_scores.h"
#include "interop/head_set_files.h"
#include "stats/correlation.h"

namespace attngeom::interop {

struct ComparisonRow {
  std::string file;                     // as given
  std::string format;                   // duo, retrieval-json, qrhead-yaml
  std::string ours;                     // "score:f_small", ..., "type:retriever", ...
  std::size_t heads = 0;                // query heads compared (the run's grid)
  std::size_t their_set = 0;            // |S|
  std::size_t our_set = 0;              // |A|: |S| for a score, the type's heads for a type
  std::size_t overlap = 0;              // |A & S|
  double jaccard = 0;                   // |A & S| / |A | S| (NaN when both are empty)
  double precision_at_k = 0;            // |A & S| / |A|, k = |A| (NaN when A is empty)
  stats::CorrelationEstimate spearman;  // ours vs their per-head score, bootstrap over heads
  std::string caveat;  // why the row's overlap or correlation says little; empty when it is informative
};

std::vector<ComparisonRow> compare_head_sets(const RunHeads& run, const std::vector<std::string>& files,
                                             const std::vector<ImportedHeadSet>& sets,
                                             const stats::BootstrapOptions& bootstrap, std::uint64_t seed);

void write_comparison_csv(const std::filesystem::path& path, const std::vector<ComparisonRow>& rows);

}  // namespace attngeom::interop
