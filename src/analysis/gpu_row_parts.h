#pragma once
// The per-row geometry of a block of heads' captured rows off the CPU: on a GPU, the selection
// metrics of docs/method.md section 2 and the reconstructed envelopes R1 and R2 of section 4
// at every (row, N) at once, and each row's mass statistics and magnitudes, with the CPU's
// bits (ops/cuda_selection.h; R2's tail probabilities and the entropy up to their last bits).
// What stays on the CPU is what each row derives from those (R3, coverage, taxonomy features).
#include <cstdint>
#include <memory>
#include <span>

#include "geometry/row_analysis.h"
#include "model/config.h"
#include "model/observer.h"

namespace attngeom {

class LayerRowParts {
 public:
  virtual ~LayerRowParts() = default;
  // For each head h of `rows` and captured row q (keys 0..positions[q]), out[(h - head_begin) *
  // rows + q] gets, as analyze_row would compute them with `options`: the selection metrics
  // where the CPU takes the direct method, and with bounds the envelopes from the row's value
  // geometry shared[kv_head * rows + q] where its model and settings are valid, and the mass
  // statistics and magnitudes of rows of two keys or more. Parts it does not compute are left
  // empty.
  virtual void fill(const ModelConfig& config, const ValueStates& values, const AttentionRows& rows,
                    std::span<const geometry::ValueGeometry> shared, const geometry::RowAnalysisOptions& options,
                    std::span<geometry::GivenRowParts> out) = 0;
};

// Whether an analysis with `options` reads the parts LayerRowParts gives: on the default N grid.
bool reads_layer_row_parts(const geometry::RowAnalysisOptions& options);

// The parts on GPU `gpu`; null in a build without CUDA.
std::unique_ptr<LayerRowParts> make_gpu_row_parts(int gpu);

// GPU memory they take beside the forward pass for sequences of `seq` tokens with `rows`
// captured rows per head; 0 in a build without CUDA.
std::uint64_t gpu_row_parts_bytes(const ModelConfig& config, int seq, std::size_t rows);

}  // namespace attngeom
