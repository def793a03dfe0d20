#pragma once
// One run directory (docs/run_format.md), loaded and checked for what the report
// reads. Required files missing or corrupt: InputError naming the file. Optional
// files (length sweep, pruning, top-N budget, compare, experts and routing, synth/) are simply
// absent.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "util/csv.h"

namespace attngeom::report {

struct SynthTable {
  std::string name;  // file name inside synth/, e.g. "summary.csv"
  CsvTable table;
};

struct RunData {
  std::filesystem::path dir;
  std::string label;   // run.json `label`, else the directory name; made unique by load_runs
  nlohmann::json run;  // run.json as written
  CsvTable heads;
  CsvTable selection;
  CsvTable sink_recall;
  CsvTable layers;
  CsvTable profile_layers;
  std::optional<CsvTable> length_sweep;
  std::optional<CsvTable> pruning;
  std::optional<CsvTable> topn_budget;  // attngeom prune's token-level top-N curve
  std::optional<CsvTable> compare;      // attngeom compare's head-set overlaps
  std::optional<CsvTable> experts;      // a mixture of experts: tokens per (routed layer, expert)
  std::optional<CsvTable> routing;      // a mixture of experts: tokens and bf16 routing flips per routed layer
  nlohmann::json prune_protocol;        // prune.json's "protocol" and "reference" (null without prune.json)
  std::vector<SynthTable> synth;        // every synth/*.csv, sorted by name
};

RunData load_run(const std::filesystem::path& dir);

// Loads every run; throws InputError for an empty list. Duplicate labels get a
// " (2)", " (3)" suffix so that overlays stay distinguishable.
std::vector<RunData> load_runs(const std::vector<std::filesystem::path>& dirs);

}  // namespace attngeom::report
