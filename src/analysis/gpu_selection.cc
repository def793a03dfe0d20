#include "analysis/gpu_selection.h"

#include "util/error.h"

#if ATTNGEOM_WITH_CUDA
#include "ops/cuda_selection.h"
#endif

namespace attngeom {

bool reads_layer_selections(const geometry::RowAnalysisOptions& options) { return !options.every_n; }

#if ATTNGEOM_WITH_CUDA
namespace {

class CudaLayerSelections final : public LayerSelections {
 public:
  explicit CudaLayerSelections(int gpu) : gpu_(gpu) {}

  void fill(const ModelConfig& config, const ValueStates& values, const AttentionRows& rows,
            const geometry::SelectionOptions& selection,
            std::span<std::vector<geometry::SelectionMetrics>> out) override {
    const std::size_t count = rows.positions.size();
    ATTNGEOM_CHECK(values.space == MemorySpace::kHost && rows.space == MemorySpace::kHost &&
                   out.size() == static_cast<std::size_t>(rows.heads()) * count);
    const int kv_begin = config.kv_head_of(rows.head_begin);
    const int kv_end = config.kv_head_of(rows.head_end - 1) + 1;
    const std::vector<std::size_t> grid = geometry::default_n_grid(static_cast<std::size_t>(rows.seq));
    if (grid.empty()) return;
    keys_.assign(out.size(), 0);
    value_head_.resize(out.size());
    for (std::size_t i = 0; i < out.size(); ++i) {
      keys_[i] = rows.positions[i % count] + 1;  // causal: keys 0..q
      value_head_[i] = config.kv_head_of(rows.head_begin + static_cast<int>(i / count)) - kv_begin;
    }
    // A row of one key has no N: it goes along with two keys' weights (the second 0) and is skipped below.
    for (int& k : keys_) k = k < 2 ? 2 : k;
    points_.resize(out.size() * grid.size());
    curves_.resize(points_.size() * selection.normalised_radii.size());
    selection_.compute({values.kv_head(kv_begin), kv_end - kv_begin, values.seq, values.head_dim, rows.probs, keys_,
                        value_head_, grid, selection.normalised_radii},
                       points_, curves_);
    const std::size_t radii = selection.normalised_radii.size();
    for (std::size_t i = 0; i < out.size(); ++i) {
      const auto keys = static_cast<std::size_t>(rows.positions[i % count]) + 1;
      const std::size_t n_grid = geometry::default_n_grid(keys).size();
      out[i].clear();
      if (n_grid == 0 ||
          geometry::resolved_method(selection.method, n_grid, keys) != geometry::ProjectionMethod::kDirect)
        continue;
      out[i].resize(n_grid);
      for (std::size_t g = 0; g < n_grid; ++g) {
        const std::size_t at = i * grid.size() + g;
        static_cast<geometry::SelectionPoint&>(out[i][g]) = points_[at];
        out[i][g].at_normalised_radius.assign(curves_.begin() + static_cast<std::ptrdiff_t>(at * radii),
                                              curves_.begin() + static_cast<std::ptrdiff_t>((at + 1) * radii));
      }
    }
  }

 private:
  int gpu_;
  CudaSelection selection_{gpu_};
  std::vector<int> keys_;                         // [heads, rows]
  std::vector<int> value_head_;                   // [heads, rows]
  std::vector<geometry::SelectionPoint> points_;  // [heads, rows, grid]
  std::vector<geometry::BallScores> curves_;      // [heads, rows, grid, radii]
};

}  // namespace

std::unique_ptr<LayerSelections> make_gpu_selections(int gpu) { return std::make_unique<CudaLayerSelections>(gpu); }

std::uint64_t gpu_selection_bytes(const ModelConfig& config, int seq, std::size_t rows) {
  const auto grid = static_cast<int>(geometry::default_n_grid(static_cast<std::size_t>(seq)).size());
  const auto radii = static_cast<int>(geometry::SelectionOptions{}.normalised_radii.size());
  return CudaSelection::bytes(config.kv_heads, seq, config.head_dim, seq, static_cast<int>(rows) * config.heads, grid,
                              radii);
}

#else

std::unique_ptr<LayerSelections> make_gpu_selections(int) { return nullptr; }

std::uint64_t gpu_selection_bytes(const ModelConfig&, int, std::size_t) { return 0; }

#endif

}  // namespace attngeom
