#pragma once
// The row-analysis and table options, each spelled once: its setting name (the run.json key,
// and the CLI's flag), where it lives, its accepted range and its help. The CLI's flags,
// run.json's writer and its reader (resume, merge) all walk this table. Defaults are the
// option structs' own initialisers.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string_view>
#include <variant>
#include <vector>

#include "analysis/aggregate.h"
#include "geometry/row_analysis.h"

namespace attngeom {

// Where an option is written in run.json, and whether it is read back.
enum class OptionPlace {
  kRecord,    // shapes every record: "settings" and "options"; not read back (the records hold it)
  kStats,     // the tables' statistics: "settings" and "options"; read back from "settings"
  kTaxonomy,  // the taxonomy thresholds: "options.taxonomy"; read back
  kTables,    // the tables' flags: "options"; read back
};

// The options a run is made with; an OptionSpec picks one member of them.
struct OptionTarget {
  geometry::RowAnalysisOptions& row;
  AggregateOptions& aggregate;
};
// A seed: an integer in [0, 2^53), which run.json's readers (JavaScript too) hold exactly.
struct SeedMember {
  std::uint64_t* value;
};
using OptionMember = std::variant<bool*, std::size_t*, SeedMember, double*, geometry::R1Eta*, std::vector<double>*>;

struct OptionSpec {
  std::string_view name;  // the setting: run.json key, and the CLI's flag (a switch for a bool)
  OptionPlace place;
  OptionMember (*member)(const OptionTarget&);
  double lo = 0, hi = 0;              // accepted range of a number
  std::string_view help;              // empty: in run.json only, not a command-line setting
  std::string_view excluded_by = {};  // a switch (by name) that makes this option meaningless
};

std::span<const OptionSpec> analysis_option_table();

// R1's eta as run.json and the CLI spell it.
std::string_view r1_eta_name(geometry::R1Eta eta);
geometry::R1Eta parse_r1_eta(std::string_view name);  // "max" or "mae"

// The value of `spec` in `target` as run.json writes it.
nlohmann::json option_json(const OptionSpec& spec, const OptionTarget& target);

}  // namespace attngeom
