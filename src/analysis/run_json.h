#pragma once
// run.json of one length's run directory, as written before its sequences are computed (the
// caller adds the progress: sequences_done, taxonomy, complete).
#include <nlohmann/json.hpp>

#include "analysis/length_plan.h"
#include "analysis/run_control.h"
#include "analysis/settings.h"
#include "model/engine.h"

namespace attngeom {

nlohmann::json run_json(const AnalysisSettings& settings, const RunInputs& inputs, const LengthPlan& plan,
                        const Engine& engine, const RunControl& control);

}  // namespace attngeom
