#pragma once
// How analyze and bench hand a forward pass to their SequenceAnalyzer. On a GPU the rows'
// cosine deviations, selection metrics and envelopes run there (gpu_deviations.h,
// gpu_row_parts.h) and the host analyses each layer while the GPU computes the next ones
// (model/observer_queue.h); on the CPU the analyzer observes itself.
#include <optional>

#include "analysis/sequence_analyzer.h"
#include "model/engine.h"
#include "model/observer_queue.h"

namespace attngeom {

// Where the analysis runs beside a GPU; the defaults are analyze's, the others for measuring
// what each part buys (bench).
struct GpuAnalysisPlacement {
  int layer_workers = 0;       // the queue's workers; 0: ObserverQueue's choice
  bool gpu_deviations = true;  // the cosine deviations on the GPU, else on the CPU
  bool gpu_selection = true;   // the selection metrics and envelopes on the GPU, else on the CPU
};

// The observer for engine's forward passes; on a GPU it is `queue`, emplaced here, whose
// finish() then follows each forward pass.
ForwardObserver& attach_analyzer(const Engine& engine, SequenceAnalyzer& analyzer, std::optional<ObserverQueue>& queue,
                                 const GpuAnalysisPlacement& placement = {});

}  // namespace attngeom
