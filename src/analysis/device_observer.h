#pragma once
// How analyze and bench hand a forward pass to their SequenceAnalyzer. On a GPU the rows'
// cosine deviations, selection metrics and envelopes run there (gpu_deviations.h,
// gpu_row_parts.h) and the host analyses each layer while the GPU computes the next ones
// (model/observer_queue.h); on the CPU the analyzer observes itself.
#include <cstdint>
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
  // GPU objects of each part (a stream and its memory each), so that layers analysed at once
  // use the GPU at once; 0: one per queue worker.
  int gpu_instances = 0;
};

// GPU memory one instance of each part that `placement` puts on the GPU takes, for sequences
// of `seq` tokens with `rows` captured rows per head, analysed with `options`.
std::uint64_t gpu_analysis_bytes(const ModelConfig& config, const geometry::RowAnalysisOptions& options,
                                 const GpuAnalysisPlacement& placement, int seq, std::size_t rows);

// The most instances, up to ObserverQueue's layer workers on this process's threads, whose
// memory (bytes each) fits beside engine's forward pass; at least 1, which
// Engine::check_gpu_memory then refuses where even that does not fit.
int fitting_gpu_instances(const Engine& engine, int seq, std::size_t rows, std::uint64_t bytes);

// The observer for engine's forward passes; on a GPU it is `queue`, emplaced here, whose
// finish() then follows each forward pass.
ForwardObserver& attach_analyzer(const Engine& engine, SequenceAnalyzer& analyzer, std::optional<ObserverQueue>& queue,
                                 const GpuAnalysisPlacement& placement = {});

}  // namespace attngeom
