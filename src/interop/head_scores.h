#pragma once
// The per-head scores that attngeom exports to, and compares with, other tools' head sets
// (docs/method.md section 6, "Head sets of other tools"): one value in [0, 1] per query head
// of the run's [layers, heads] grid (flat index layer * heads + head).
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "prune/head_table.h"
#include "util/gqa.h"

namespace attngeom::interop {

// The scores by name, as heads.csv spells its columns.
const std::vector<std::string>& score_names();  // f_small, sink_mass, last_mass, entropy
// The types a head set can be drawn from (heads.csv `label`).
const std::vector<std::string>& type_names();  // retriever, mixer, reset

// A run's head grid and scores: heads.csv for the means, records/ for per-sequence values.
struct RunHeads {
  std::filesystem::path run_dir;
  prune::HeadTable table;
  int kv_heads = 0;  // run.json model.kv_heads; query head h belongs to KV head h / (heads / kv_heads)

  int kv_head_of(int head) const { return attngeom::kv_head_of(head, table.grid.heads, kv_heads); }
  // heads.csv's mean of `score` per head; throws SettingError for an unknown name.
  const std::vector<double>& score(const std::string& name) const;
  // 1 for the heads labelled `type`, else 0; throws SettingError for an unknown type.
  std::vector<double> type_indicator(const std::string& type) const;
  // [sequences][heads]: `score` per sequence (its mean over the record's query rows), in
  // sequence order; empty when the run keeps no records.
  std::vector<std::vector<double>> per_sequence(const std::string& name) const;
};

RunHeads read_run_heads(const std::filesystem::path& run_dir);

}  // namespace attngeom::interop
