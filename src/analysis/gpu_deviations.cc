#include "analysis/gpu_deviations.h"

#include <vector>

#include "util/error.h"

#if ATTNGEOM_WITH_CUDA
#include "ops/cuda_pair_deviations.h"
#endif

namespace attngeom {

bool reads_layer_deviations(const geometry::RowAnalysisOptions& options) { return options.bounds && !options.every_n; }

#if ATTNGEOM_WITH_CUDA
namespace {

class CudaLayerDeviations final : public LayerDeviations {
 public:
  explicit CudaLayerDeviations(int gpu) : pairs_(gpu) {}

  void fill(const ValueStates& values, int kv_begin, int kv_end, std::span<const int> positions,
            std::span<geometry::ValueGeometry> geometry) override {
    const std::size_t rows = positions.size();
    const auto heads = static_cast<std::size_t>(kv_end - kv_begin);
    ATTNGEOM_CHECK(values.space == MemorySpace::kHost && kv_begin >= 0 && kv_end <= values.kv_heads &&
                   geometry.size() == heads * rows);
    keys_.resize(rows);
    for (std::size_t q = 0; q < rows; ++q) keys_[q] = positions[q] + 1;  // causal: keys 0..q
    models_.resize(geometry.size());
    for (std::size_t i = 0; i < geometry.size(); ++i) models_[i] = {geometry[i].model.beta, geometry[i].model.rho_0};
    totals_.resize(geometry.size());
    pairs_.compute(values.kv_head(kv_begin), static_cast<int>(heads), values.seq, values.head_dim, keys_, models_,
                   totals_);
    const auto dim = static_cast<double>(values.head_dim);
    for (std::size_t i = 0; i < geometry.size(); ++i) {
      geometry::CosineDeviation& d = geometry[i].deviation;
      d = {totals_[i].max_abs, 0.0, totals_[i].pairs};
      if (d.pairs > 0) d.sigma2 = dim * totals_[i].sum_sq / static_cast<double>(d.pairs);  // as the CPU's
    }
  }

 private:
  CudaPairDeviations pairs_;
  std::vector<int> keys_;                    // [rows]
  std::vector<PairDeviationModel> models_;   // [heads, rows]
  std::vector<PairDeviationTotals> totals_;  // [heads, rows]
};

}  // namespace

std::unique_ptr<LayerDeviations> make_gpu_deviations(int gpu) { return std::make_unique<CudaLayerDeviations>(gpu); }

std::uint64_t gpu_deviation_bytes(const ModelConfig& config, int seq, std::size_t rows) {
  return CudaPairDeviations::bytes(config.kv_heads, seq, config.head_dim, static_cast<int>(rows));
}

#else

std::unique_ptr<LayerDeviations> make_gpu_deviations(int) { return nullptr; }

std::uint64_t gpu_deviation_bytes(const ModelConfig&, int, std::size_t) { return 0; }

#endif

}  // namespace attngeom
