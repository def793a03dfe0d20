#pragma once
// The self-contained HTML report of one or more run directories
// (docs/run_format.md, docs/report.md). One file, no external reference: the
// charting libraries (Vega, Vega-Lite, vega-embed) are inlined at build time.
#include <filesystem>
#include <string>
#include <vector>

namespace attngeom {

struct ReportOptions {
  // The heading; empty: "attngeom report: " followed by the run labels.
  std::string title;
  // Who rendered it, shown in the footer, e.g. "attngeom 0.1.0 (abc123)"; empty: "attngeom".
  std::string generator;
  // One paragraph per run, in the order of the run directories, shown side by side above the
  // key numbers (e.g. what the demo's models are built to show); empty, or an empty string: none.
  std::vector<std::string> run_notes;
};

// Reads every run directory and writes one report that overlays the runs, labelled
// by run.json `label` (duplicates get a suffix). `out` is written atomically.
// Throws InputError naming the file when a required run file is missing or corrupt
// (run.json, heads.csv, selection.csv, sink_recall.csv, layers.csv,
// profile_layers.csv) or `out` cannot be written. Optional files (length_sweep.csv,
// pruning.csv, synth/*.csv) that are absent just drop their section.
void write_report(const std::vector<std::filesystem::path>& run_dirs, const std::filesystem::path& out,
                  const ReportOptions& options);

}  // namespace attngeom
