#pragma once
// The resource pre-flight of a run, before anything is written: memory for the largest length
// in flight (against the tighter of MemAvailable and the cgroup's limit), disk for every
// record still to write. Throws InputError when they will not suffice; warns through `control`
// when the weights will stream from storage.
#include <vector>

#include "analysis/length_plan.h"
#include "analysis/run_control.h"
#include "analysis/settings.h"

namespace attngeom {

void check_run_resources(const AnalysisSettings& settings, const RunInputs& inputs,
                         const std::vector<LengthPlan>& plans, const RunControl& control);

}  // namespace attngeom
