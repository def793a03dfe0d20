#pragma once
// The synthetic-ablation tables of a run (synth/*.csv with `profile` and `n` columns)
// reshaped for the report: only the metrics that vary with N, each with the reconstructed
// bound drawn over it; the file's constant settings (d, L) become one line of text.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "util/csv.h"

namespace attngeom::report {

struct SynthRows {
  // [run, profile, n, metric, value, lo, hi]: lo/hi the reconstructed bound, null where none
  std::vector<nlohmann::json> rows;
  std::vector<std::string> metrics;  // display names drawn; empty: the file is not drawable
  std::string settings;              // e.g. "d = 64, L = 255": numeric columns constant over the file
};

SynthRows synth_rows(const std::string& run_label, const CsvTable& table);

}  // namespace attngeom::report
