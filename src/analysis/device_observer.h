#pragma once
// Where analyze and bench run the analysis beside a GPU: the rows' cosine deviations,
// selection metrics and envelopes there (gpu_deviations.h, gpu_row_parts.h), the rest on the
// host behind a queue (overlapped_sequences.h), within the GPU memory left by the forward pass.
#include <cstdint>

#include "analysis/overlapped_sequences.h"
#include "model/engine.h"

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

// `placement` with the most GPU instances, up to its queue's workers, that fit beside engine's
// forward pass for sequences of `seq` tokens with `rows` captured rows, analysed with
// `options`; refuses (Engine::check_gpu_memory), naming both sizes, where even one does not.
GpuAnalysisPlacement fitted_placement(const Engine& engine, const ModelConfig& config,
                                      const geometry::RowAnalysisOptions& options, GpuAnalysisPlacement placement,
                                      int seq, std::size_t rows);

// How analyze and bench take sequences through engine: on a GPU behind a queue, with the
// parts that `placement` puts there; on the CPU observed directly.
OverlappedSequences::Setup overlapped_setup(const Engine& engine, const GpuAnalysisPlacement& placement = {});

}  // namespace attngeom
