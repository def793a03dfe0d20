#pragma once
// The cosine deviations of a layer's captured rows off the CPU: on a GPU, the O(M^2 d) part of
// the value geometry (geometry::CosineDeviation: R1's eta and R2's sigma^2) runs beside the
// forward pass instead of on the host's cores (ops/cuda_pair_deviations.h). The rest of the
// value geometry (norms, rho_0, the lag curve and its fit, hence the model) stays on the CPU.
#include <cstdint>
#include <memory>
#include <span>

#include "geometry/row_analysis.h"
#include "model/config.h"
#include "model/observer.h"

namespace attngeom {

class LayerDeviations {
 public:
  virtual ~LayerDeviations() = default;
  // For kv heads [kv_begin, kv_end) of `values` (host) and each captured row q (keys
  // 0..positions[q]): geometry[(kv - kv_begin) * rows + q].deviation, from the model that
  // entry already holds; nothing else of it changes.
  virtual void fill(const ValueStates& values, int kv_begin, int kv_end, std::span<const int> positions,
                    std::span<geometry::ValueGeometry> geometry) = 0;
};

// Whether an analysis with `options` reads the deviations LayerDeviations gives: with bounds on
// the default N grid (with every N, the double Gram of each row gives them).
bool reads_layer_deviations(const geometry::RowAnalysisOptions& options);

// The deviations on GPU `gpu`; null in a build without CUDA.
std::unique_ptr<LayerDeviations> make_gpu_deviations(int gpu);

// GPU memory the deviations take beside the forward pass for sequences of `seq` tokens with
// `rows` captured rows; 0 in a build without CUDA.
std::uint64_t gpu_deviation_bytes(const ModelConfig& config, int seq, std::size_t rows);

}  // namespace attngeom
