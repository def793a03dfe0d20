// Cost of analyze's per-row geometry (geometry::analyze_row) at a 7B head's size,
// M = 1024 keys, d = 128, on the default N grid (docs/method.md section 2): everything, with the maximum cosine
// deviation screened by the fp32 (Eigen), int8 or bf16 (oneDNN, analyze's) pair products, and
// without the reconstructed bounds (whose deviations need the O(M^2 d) pairwise products).
// analyze runs this once per (layer, head, sequence, query row). BM_RowPart times its stages
// one by one, with analyze's screen for this CPU.
#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "analysis/screen_products.h"
#include "four_phase_head.h"
#include "geometry/deviation_sums.h"
#include "geometry/row_analysis.h"
#include "geometry/value_rows.h"
#include "synth/synthetic.h"

namespace attngeom::geometry {

namespace {

using bench::kDim;
using bench::kKeys;

enum Variant { kWithoutBounds, kFp32Screen, kInt8Screen, kBf16Screen };

void BM_AnalyzeRow(benchmark::State& state) {
  const synth::SyntheticHead& head = bench::four_phase_head();
  const HeadRowView row{head.alpha, head.values, kDim};
  const auto variant = static_cast<Variant>(state.range(0));
  std::unique_ptr<PairProducts> screen;
  if (variant == kInt8Screen) screen = make_int8_pair_products(kDim);
  if (variant == kBf16Screen) screen = make_bf16_pair_products(kDim);
  if ((variant == kInt8Screen || variant == kBf16Screen) && !screen) {
    state.SkipWithError(variant == kInt8Screen ? "no int8 dot products (VNNI) on this CPU"
                                               : "no bf16 matmul on this CPU");
    return;
  }
  RowAnalysisOptions options;
  options.bounds = variant != kWithoutBounds;
  options.pair_products = screen.get();
  for (auto _ : state) benchmark::DoNotOptimize(analyze_row(row, options));
  static constexpr const char* kLabels[] = {"without bounds", "with bounds R1/R2/R3, fp32 screen",
                                            "with bounds R1/R2/R3, int8 screen", "with bounds R1/R2/R3, bf16 screen"};
  state.SetLabel(kLabels[variant]);
}
BENCHMARK(BM_AnalyzeRow)
    ->Arg(kFp32Screen)
    ->Arg(kInt8Screen)
    ->Arg(kBf16Screen)
    ->Arg(kWithoutBounds)
    ->Unit(benchmark::kMillisecond);

// What each head adds once its kv group's value geometry is shared (analyze with GQA, and
// every head on a GPU, whose deviations come from the GPU): analyze_row(row, values).
// The bench head's row with analyze's screen and its value geometry, as a GQA group shares it.
struct SharedRow {
  HeadRowView row{bench::four_phase_head().alpha, bench::four_phase_head().values, kDim};
  std::unique_ptr<PairProducts> screen = make_screen_pair_products(kDim);
  RowAnalysisOptions options = with_screen(screen.get());
  ValueGeometry values = analyze_values(row, options);

  static RowAnalysisOptions with_screen(const PairProducts* screen) {
    RowAnalysisOptions options;
    options.pair_products = screen;
    return options;
  }
};

void BM_AnalyzeRowGivenValues(benchmark::State& state) {
  const SharedRow r;
  for (auto _ : state) benchmark::DoNotOptimize(analyze_row(r.row, r.values, r.options));
  state.SetLabel("with bounds R1/R2/R3, the value geometry given");
}
BENCHMARK(BM_AnalyzeRowGivenValues)->Unit(benchmark::kMillisecond);

// What each head leaves to the CPU once a GPU gives its selection metrics, envelopes, mass
// statistics and magnitudes too (analyze on a GPU): analyze_row(row, values, given parts).
void BM_AnalyzeRowGivenParts(benchmark::State& state) {
  const SharedRow r;
  const RowAnalysis whole = analyze_row(r.row, r.values, r.options);
  for (auto _ : state) {
    // Timed with the copy, as the GPU's results are copied into the parts on the host.
    benchmark::DoNotOptimize(analyze_row(
        r.row, r.values, GivenRowParts{whole.selection, whole.r1, whole.r2, whole.mass, whole.magnitudes}, r.options));
  }
  state.SetLabel("with bounds R1/R2/R3, the value geometry, selection, envelopes, mass and magnitudes given");
}
BENCHMARK(BM_AnalyzeRowGivenParts)->Unit(benchmark::kMillisecond);

// Each stage of the row above on its own (same row, same options), so that a change to one
// is measured apart from the rest: what analyze_row spends where.
enum Part { kUnits, kLagCurve, kScreen, kDeviationSquares, kSelection, kEnvelopes };

void BM_RowPart(benchmark::State& state) {
  const synth::SyntheticHead& head = bench::four_phase_head();
  const HeadRowView row{head.alpha, head.values, kDim};
  const auto part = static_cast<Part>(state.range(0));
  const std::unique_ptr<PairProducts> screen = make_screen_pair_products(kDim);
  const UnitRows units = unit_rows(row);
  const LagCurve lag = lag_curve(units);
  const CosineModel model{lag.fit.beta, sink_similarity(units)};
  const std::vector<std::size_t> n_values = default_n_grid(row.keys());
  const CosineDeviation deviation = screened_cosine_deviation(units, model, *screen);
  const BoundInputs inputs{row.alpha, units.norms, model};
  for (auto _ : state) {
    switch (part) {
      case kUnits:
        benchmark::DoNotOptimize(unit_rows(row));
        break;
      case kLagCurve:
        benchmark::DoNotOptimize(lag_curve(units));
        break;
      case kScreen:
        benchmark::DoNotOptimize(screened_cosine_deviation(units, model, *screen));
        break;
      case kDeviationSquares:
        benchmark::DoNotOptimize(deviation_square_sum(units, model));
        break;
      case kSelection:
        benchmark::DoNotOptimize(selection_metrics(row, n_values));
        break;
      case kEnvelopes:
        benchmark::DoNotOptimize(
            reconstructed_envelopes(inputs, n_values, deviation.max_abs, {kDim, deviation.sigma2, 0.05}));
        break;
    }
  }
  static constexpr const char* kLabels[] = {
      "unit vectors",        "lag curve and its fit", "deviation screen (sigma2 included)",
      "sigma2's sums alone", "selection metrics",     "R1/R2 envelopes"};
  state.SetLabel(kLabels[part]);
}
BENCHMARK(BM_RowPart)->DenseRange(kUnits, kEnvelopes)->Unit(benchmark::kMillisecond);

// One kv head's values [T, d], drifting from key to key, and the captured rows' lengths M of
// a strided capture (analyze --queries stride:K).
struct StridedRows {
  std::vector<float> values;
  std::vector<float> alpha;  // [T] uniform: only the values are read
  std::vector<std::size_t> keys;

  StridedRows(std::size_t seq, std::size_t stride) : values(seq * kDim), alpha(seq, 1.0f / static_cast<float>(seq)) {
    std::mt19937_64 rng(3);
    std::normal_distribution<float> gauss(0.0f, 1.0f);
    for (std::size_t k = 0; k < seq; ++k) {
      for (std::size_t t = 0; t < kDim; ++t)
        values[k * kDim + t] = (k > 0 ? 0.8f * values[(k - 1) * kDim + t] : 0.0f) + gauss(rng);
    }
    for (std::size_t q = stride - 1; q < seq; q += stride) keys.push_back(q + 1);
  }

  // Every row's value geometry, with the deviations found by `method`.
  void analyze(const RowAnalysisOptions& options, DeviationMethod method) const {
    ValueRows rows(HeadRowView{alpha, values, kDim}, keys, options, method);
    for (std::size_t p = 0; p < rows.band_parts(); ++p) rows.compute_band(p);
    rows.finish_band();
    std::vector<ValueGeometry> geometry;
    for (std::size_t r = 0; r < keys.size(); ++r) geometry.push_back(rows.row(r));
    for (std::size_t p = 0; p < rows.deviation_parts(); ++p) rows.compute_deviations(p, geometry);
    if (rows.deviation_parts() > 0) rows.finish_deviations(geometry);
    benchmark::DoNotOptimize(geometry);
  }
};

// The value geometry (without deviations) of the rows of one kv head at T = 8192, a row every
// 128 keys: each row alone (analyze_values) or all at once sharing units and lag cosines.
void BM_ValueGeometryOfStridedRows(benchmark::State& state) {
  const StridedRows strided(8192, 128);
  RowAnalysisOptions options;
  options.bounds = false;
  const bool shared = state.range(0) == 1;
  for (auto _ : state) {
    if (shared) {
      strided.analyze(options, DeviationMethod::kPerRow);
    } else {
      for (const std::size_t m : strided.keys) {
        const std::vector<float> row_alpha(m, 1.0f / static_cast<float>(m));
        benchmark::DoNotOptimize(analyze_values(
            HeadRowView{row_alpha, std::span<const float>(strided.values).first(m * kDim), kDim}, options));
      }
    }
  }
  state.SetLabel(shared ? "all rows at once (ValueRows)" : "each row alone (analyze_values)");
}
BENCHMARK(BM_ValueGeometryOfStridedRows)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// The same with the deviations (analyze's screen), at T = 2048 with a row every range(0) keys:
// each row screened on its own, or the maxima shared through running extrema by lag.
void BM_DeviationsOfStridedRows(benchmark::State& state) {
  const StridedRows strided(2048, static_cast<std::size_t>(state.range(0)));
  const std::unique_ptr<PairProducts> screen = make_screen_pair_products(kDim);
  RowAnalysisOptions options;
  options.pair_products = screen.get();
  const auto method = state.range(1) == 1 ? DeviationMethod::kSharedMaxima : DeviationMethod::kPerRow;
  for (auto _ : state) strided.analyze(options, method);
  state.SetLabel(std::to_string(strided.keys.size()) + " rows, " +
                 (method == DeviationMethod::kPerRow ? "each screened" : "shared maxima"));
}
BENCHMARK(BM_DeviationsOfStridedRows)
    ->Args({512, 0})
    ->Args({512, 1})
    ->Args({128, 0})
    ->Args({128, 1})
    ->Args({32, 0})
    ->Args({32, 1})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace attngeom::geometry
