#include "analysis/gpu_row_parts.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "util/error.h"

#if ATTNGEOM_WITH_CUDA
#include "ops/cuda_selection.h"
#endif

namespace attngeom {

bool reads_layer_row_parts(const geometry::RowAnalysisOptions& options) { return !options.every_n; }

#if ATTNGEOM_WITH_CUDA
namespace {

// What the CPU's envelopes would refuse (ModelSweep, the R1 and R2 steps) stays with the CPU,
// which then says why.
bool valid_bounds(const geometry::CosineModel& model, const geometry::BoundSettings& settings) {
  return std::abs(model.rho_0) <= 1.0 && model.beta >= 0.0 && std::isfinite(settings.eta) && settings.eta >= 0.0 &&
         std::isfinite(settings.sigma2) && settings.sigma2 > 0.0;
}

// Whether every weight the GPU reads (keys[i] of row i, [heads, rows] in order) is finite and
// at least 0, as the CPU's check of a row requires.
bool all_weights_valid(const AttentionRows& rows, std::span<const int> keys) {
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const float* alpha = rows.probs + i * static_cast<std::size_t>(rows.seq);  // [heads, rows, seq]
    if (!std::all_of(alpha, alpha + keys[i], [](float a) { return std::isfinite(a) && a >= 0.0f; })) return false;
  }
  return true;
}

class CudaLayerRowParts final : public LayerRowParts {
 public:
  explicit CudaLayerRowParts(int gpu) : selection_(gpu) {}

  void fill(const ModelConfig& config, const ValueStates& values, const AttentionRows& rows,
            std::span<const geometry::ValueGeometry> shared, const geometry::RowAnalysisOptions& options,
            std::span<geometry::GivenRowParts> out) override {
    const std::size_t count = rows.positions.size();
    ATTNGEOM_CHECK(values.space == MemorySpace::kHost && rows.space == MemorySpace::kHost &&
                   out.size() == static_cast<std::size_t>(rows.heads()) * count &&
                   shared.size() == static_cast<std::size_t>(config.kv_heads) * count && values.seq == rows.seq);
    const int kv_begin = config.kv_head_of(rows.head_begin);
    const int kv_end = config.kv_head_of(rows.head_end - 1) + 1;
    const std::vector<std::size_t> grid = geometry::default_n_grid(static_cast<std::size_t>(rows.seq));
    if (grid.empty()) return;
    const std::size_t radii = options.selection.normalised_radii.size();
    keys_.resize(out.size());
    value_head_.resize(out.size());
    for (std::size_t i = 0; i < out.size(); ++i) {
      // A row of one key has no N: it goes along with two keys' weights (the second 0) and is skipped below.
      keys_[i] = std::max(rows.positions[i % count] + 1, 2);  // causal: keys 0..q
      value_head_[i] = config.kv_head_of(rows.head_begin + static_cast<int>(i / count)) - kv_begin;
    }
    // Weights the CPU refuses stay with it, which then says which: on the GPU a NaN would keep
    // the selection's loops from ending.
    if (!all_weights_valid(rows, keys_)) {
      std::fill(out.begin(), out.end(), geometry::GivenRowParts{});
      return;
    }
    points_.resize(out.size() * grid.size());
    curves_.resize(points_.size() * radii);
    const SelectionInputs inputs{values.kv_head(kv_begin),
                                 kv_end - kv_begin,
                                 values.seq,
                                 values.head_dim,
                                 rows.probs,
                                 keys_,
                                 value_head_,
                                 grid,
                                 options.selection.normalised_radii};
    mass_.resize(out.size());
    magnitudes_.resize(out.size());
    const MassRequest mass{options.mass, mass_, magnitudes_};
    if (options.bounds) prepare_envelopes(config, rows, shared, options, grid.size());
    selection_.compute(inputs, points_, curves_, options.bounds ? &request_ : nullptr, &mass);
    for (std::size_t i = 0; i < out.size(); ++i) {
      const auto keys = static_cast<std::size_t>(rows.positions[i % count]) + 1;
      const std::size_t n_grid = geometry::default_n_grid(keys).size();
      out[i] = {};
      if (n_grid == 0) continue;  // one key, computed as two: all of it stays with the CPU
      out[i].mass = mass_[i];
      out[i].magnitudes = magnitudes_[i];
      if (geometry::resolved_method(options.selection.method, n_grid, keys) == geometry::ProjectionMethod::kDirect) {
        out[i].selection.resize(n_grid);
        for (std::size_t g = 0; g < n_grid; ++g) {
          const std::size_t at = i * grid.size() + g;
          static_cast<geometry::SelectionPoint&>(out[i].selection[g]) = points_[at];
          out[i].selection[g].at_normalised_radius.assign(
              curves_.begin() + static_cast<std::ptrdiff_t>(at * radii),
              curves_.begin() + static_cast<std::ptrdiff_t>((at + 1) * radii));
        }
      }
      if (!options.bounds || !valid_[i]) continue;
      const auto from = static_cast<std::ptrdiff_t>(i * grid.size());
      const auto to = from + static_cast<std::ptrdiff_t>(n_grid);
      out[i].r1.assign(r1_.begin() + from, r1_.begin() + to);
      out[i].r2.points.assign(r2_.begin() + from, r2_.begin() + to);
      out[i].r2.separation.assign(separation_.begin() + from, separation_.begin() + to);
    }
  }

 private:
  // Each row's model and bound settings from its kv head's value geometry; rows whose bounds
  // the CPU would refuse get a harmless model and no envelopes.
  void prepare_envelopes(const ModelConfig& config, const AttentionRows& rows,
                         std::span<const geometry::ValueGeometry> shared, const geometry::RowAnalysisOptions& options,
                         std::size_t grid) {
    const std::size_t count = rows.positions.size();
    const std::size_t total = keys_.size();
    beta_.resize(total);
    rho_0_.resize(total);
    eta_.resize(total);
    sigma2_.resize(total);
    valid_.assign(total, false);
    for (std::size_t i = 0; i < total; ++i) {
      const int kv = config.kv_head_of(rows.head_begin + static_cast<int>(i / count));
      const geometry::ValueGeometry& v = shared[static_cast<std::size_t>(kv) * count + i % count];
      const geometry::BoundSettings settings = geometry::bound_settings(v.deviation, v.lag, options);
      valid_[i] = valid_bounds(v.model, settings);
      beta_[i] = valid_[i] ? v.model.beta : 0.0;
      rho_0_[i] = valid_[i] ? v.model.rho_0 : 0.0;
      eta_[i] = valid_[i] ? settings.eta : 0.0;
      sigma2_[i] = valid_[i] ? settings.sigma2 : 1.0;
    }
    r1_.resize(total * grid);
    r2_.resize(total * grid);
    separation_.resize(total * grid);
    request_ = {beta_, rho_0_, eta_, sigma2_, options.r2_delta, r1_, r2_, separation_};
  }

  CudaSelection selection_;
  std::vector<int> keys_;                              // [heads, rows]
  std::vector<int> value_head_;                        // [heads, rows]
  std::vector<geometry::SelectionPoint> points_;       // [heads, rows, grid]
  std::vector<geometry::BallScores> curves_;           // [heads, rows, grid, radii]
  std::vector<double> beta_, rho_0_, eta_, sigma2_;    // [heads, rows]
  std::vector<bool> valid_;                            // [heads, rows]
  std::vector<geometry::EnvelopePoint> r1_, r2_;       // [heads, rows, grid]
  std::vector<geometry::SeparationBound> separation_;  // [heads, rows, grid]
  EnvelopeRequest request_;
  std::vector<geometry::MassStats> mass_;             // [heads, rows]
  std::vector<geometry::HeadMagnitudes> magnitudes_;  // [heads, rows]
};

}  // namespace

std::unique_ptr<LayerRowParts> make_gpu_row_parts(int gpu) { return std::make_unique<CudaLayerRowParts>(gpu); }

std::uint64_t gpu_row_parts_bytes(const ModelConfig& config, int seq, std::size_t rows) {
  const auto grid = static_cast<int>(geometry::default_n_grid(static_cast<std::size_t>(seq)).size());
  const auto radii = static_cast<int>(geometry::SelectionOptions{}.normalised_radii.size());
  return CudaSelection::bytes(config.kv_heads, seq, config.head_dim, seq, static_cast<int>(rows) * config.heads, grid,
                              radii);
}

#else

std::unique_ptr<LayerRowParts> make_gpu_row_parts(int) { return nullptr; }

std::uint64_t gpu_row_parts_bytes(const ModelConfig&, int, std::size_t) { return 0; }

#endif

}  // namespace attngeom
