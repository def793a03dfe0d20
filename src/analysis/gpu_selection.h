#pragma once
// The selection metrics of a block of heads' captured rows off the CPU: on a GPU, every
// (row, N) of docs/method.md section 2 at once, with the CPU's bits (ops/cuda_selection.h).
// What reads the metrics (envelopes, R3, taxonomy features) stays on the CPU.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "geometry/row_analysis.h"
#include "model/config.h"
#include "model/observer.h"

namespace attngeom {

class LayerSelections {
 public:
  virtual ~LayerSelections() = default;
  // For each head h of `rows` and captured row q (keys 0..positions[q]) whose metrics the CPU
  // would compute with the direct method: out[(h - head_begin) * rows + q] =
  // selection_metrics(that row, default_n_grid(M), selection); the others are left empty.
  virtual void fill(const ModelConfig& config, const ValueStates& values, const AttentionRows& rows,
                    const geometry::SelectionOptions& selection,
                    std::span<std::vector<geometry::SelectionMetrics>> out) = 0;
};

// Whether an analysis with `options` reads the metrics LayerSelections gives: on the default N grid.
bool reads_layer_selections(const geometry::RowAnalysisOptions& options);

// The selection metrics on GPU `gpu`; null in a build without CUDA.
std::unique_ptr<LayerSelections> make_gpu_selections(int gpu);

// GPU memory they take beside the forward pass for sequences of `seq` tokens with `rows`
// captured rows per head; 0 in a build without CUDA.
std::uint64_t gpu_selection_bytes(const ModelConfig& config, int seq, std::size_t rows);

}  // namespace attngeom
