#pragma once
// analyze's options, each spelled once: its setting name (the run.json key, the CLI's flag and
// the Python keyword), where it lives, its accepted range and its help. The row-analysis and
// table options are shared by analyze, demo and metrics; the run-level ones (sequences, corpus
// cut, run) are analyze's settings beyond them. The CLI's flags, Python's keywords, run.json's
// writer and its reader (resume, merge) all walk this table. Defaults are the settings
// structs' own initialisers. Settings whose syntax differs between front ends (lengths, shard,
// resume/overwrite, precision, corpus format, threads) are spelled by each front end.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string_view>
#include <variant>
#include <vector>

#include "analysis/aggregate.h"
#include "analysis/settings.h"
#include "capture/query_rows.h"
#include "geometry/row_analysis.h"

namespace attngeom {

// Where an option is written in run.json, and whether it is read back.
enum class OptionPlace {
  kRecord,    // shapes every record: "settings" and "options"; not read back (the records hold it)
  kStats,     // the tables' statistics: "settings" and "options"; read back from "settings"
  kTaxonomy,  // the taxonomy thresholds: "options.taxonomy"; read back
  kTables,    // the tables' flags: "options"; read back
  kOutputs,   // which optional tables are written: not in run.json (a later run may ask again)
  // Run-level settings (analyze's, through AnalysisSettings):
  kSequences,  // the sequences and their rows (analyze and demo): "settings"
  kCorpusCut,  // how the corpus is cut into sequences (analyze): "settings"
  kRun,        // how the run goes (analyze): not in run.json, since it changes no result
};

// Whether `place` holds a run-level setting, reached through OptionTarget::run.
bool is_run_level(OptionPlace place);

// The options a run is made with; an OptionSpec picks one member of them. `run` is null where
// only the row and table options exist (metrics): the run-level entries are then skipped; and
// `per_sequence` where no table is written (run.json's reader and writer).
struct OptionTarget {
  geometry::RowAnalysisOptions& row;
  AggregateOptions& aggregate;
  AnalysisSettings* run = nullptr;
  bool* per_sequence = nullptr;
};
inline OptionTarget option_target(AnalysisSettings& settings) {
  return {settings.row, settings.aggregate, &settings, &settings.per_sequence};
}
// A seed: an integer in [0, 2^53), which run.json's readers (JavaScript too) hold exactly.
struct SeedMember {
  std::uint64_t* value;
};
// A seed that may be absent (null in run.json).
struct OptionalSeedMember {
  std::optional<std::uint64_t>* value;
};
// A bool chosen by name (e.g. the pack separator: bos or none).
struct NamedBoolMember {
  bool* value;
  std::string_view if_true, if_false;
};
using OptionMember = std::variant<bool*, int*, std::size_t*, SeedMember, OptionalSeedMember, double*, geometry::R1Eta*,
                                  std::vector<double>*, NamedBoolMember, QuerySelection*, std::string*>;

struct OptionSpec {
  std::string_view name;  // the setting: run.json key, and the CLI's flag (a switch for a bool)
  OptionPlace place;
  OptionMember (*member)(const OptionTarget&);
  double lo = 0, hi = 0;              // accepted range of a number
  std::string_view help = {};         // empty: in run.json only, not a command-line setting
  std::string_view excluded_by = {};  // a switch (by name) that makes this option meaningless
  std::string_view needs = {};        // a switch (by name) without which this option means nothing
};

std::span<const OptionSpec> analysis_option_table();
// The entry named `name` (which must exist).
const OptionSpec& option_spec(std::string_view name);

// R1's eta as run.json and the CLI spell it.
std::string_view r1_eta_name(geometry::R1Eta eta);
geometry::R1Eta parse_r1_eta(std::string_view name);  // "max" or "mae"

// The value of `spec` in `target` as run.json writes it.
nlohmann::json option_json(const OptionSpec& spec, const OptionTarget& target);

// Whether `spec` means something in `target`: false while the switch it needs is off.
bool option_applies(const OptionSpec& spec, const OptionTarget& target);

}  // namespace attngeom
