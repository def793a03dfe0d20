#pragma once
// What a run directory's run.json gives back to a run that continues it (resume, merge): the
// aggregation options it was made with, and its label.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "analysis/aggregate.h"
#include "analysis/settings.h"

namespace attngeom {

// The aggregation options a run was made with, from its run.json: the stats seed and
// bootstrap of `settings`, the taxonomy thresholds and flags of `options` (defaults where
// an older run lacks them). Throws InputError for a value that is not a number.
AggregateOptions aggregate_options_of_run(const nlohmann::json& run, const std::filesystem::path& dir);

// The label a resumed run keeps: the one it was started with. A different label is refused
// (a run relabelled halfway would name one set of tables two ways); without one, a label
// given at the start stays, and a default (the directory's name) stays the default.
std::string resumed_label(const AnalysisSettings& settings);

}  // namespace attngeom
