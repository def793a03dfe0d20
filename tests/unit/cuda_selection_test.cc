// The selection metrics, reconstructed envelopes, mass statistics and magnitudes on a GPU
// (ops/cuda_selection.h) against selection_metrics's direct method, reconstructed_envelopes,
// mass_stats and head_magnitudes on the CPU, bit for bit but for R2's tail probabilities and
// the entropy: the GPU runs the CPU's arithmetic in the CPU's order
// (geometry/selection_step.h and envelope_step.h, whose arrangement
// tests/geometry/selection_step_test.cc and envelope_step_test.cc check on the CPU). Skipped
// where no GPU is visible.
#include "ops/cuda_selection.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "analysis/gpu_row_parts.h"
#include "geometry/head_features.h"
#include "geometry/mass_stats.h"
#include "geometry/reconstructed_bounds.h"
#include "geometry/selection_metrics.h"
#include "geometry/value_diagnostics.h"
#include "gpu_visible.h"
#include "ops/cuda_backend.h"
#include "random_rows.h"
#include "same_geometry.h"
#include "sequence_analyzer_harness.h"

namespace attngeom {
namespace {

using testing::gpu_visible;

// Rows of random weights (ties, zeros) over keys 0..keys[r]-1 of value head r % heads, whose
// values repeat one vector here and there (distances that cancel) and hold a zero vector.
void expect_gpu_matches_cpu(int heads, int seq, int dim, const std::vector<int>& keys,
                            std::uint64_t chunk_bytes = CudaSelection::kDefaultChunkBytes) {
  std::mt19937_64 rng(61);
  const auto d = static_cast<std::size_t>(dim);
  std::vector<float> values(static_cast<std::size_t>(heads) * seq * d);
  std::normal_distribution<float> gauss(0.0f, 1.0f);
  for (float& v : values) v = gauss(rng);
  for (int h = 0; h < heads; ++h) {
    float* head = values.data() + static_cast<std::size_t>(h) * seq * d;
    for (int k = 9; k < seq; k += 31) std::copy_n(head + 4 * d, d, head + static_cast<std::size_t>(k) * d);
    std::fill_n(head + 2 * d, d, 0.0f);
  }
  const auto rows = keys.size();
  std::vector<float> alpha(rows * static_cast<std::size_t>(seq), 0.0f);
  std::vector<int> value_head(rows);
  for (std::size_t r = 0; r < rows; ++r) {
    const auto m = static_cast<std::size_t>(keys[r]);
    const geometry::testing::OwnedRow random = geometry::testing::random_row(rng, m, 1, {0.2, 0.1, 0.0});
    std::copy(random.alpha.begin(), random.alpha.end(), alpha.begin() + static_cast<std::ptrdiff_t>(r * seq));
    value_head[r] = static_cast<int>(r) % heads;
  }
  const std::vector<std::size_t> grid = geometry::default_n_grid(static_cast<std::size_t>(seq));
  geometry::SelectionOptions options;
  options.method = geometry::ProjectionMethod::kDirect;
  const std::vector<double>& radii = options.normalised_radii;
  std::vector<geometry::SelectionPoint> points(rows * grid.size());
  std::vector<geometry::BallScores> curves(points.size() * radii.size());
  // The envelopes too, with models of every kind: a decay, none (beta = inf), one constant cosine.
  const geometry::CosineModel models[] = {{0.1, 0.3}, {std::numeric_limits<double>::infinity(), 0.0}, {0.0, -0.4}};
  std::vector<double> beta(rows), rho_0(rows), eta(rows), sigma2(rows);
  for (std::size_t r = 0; r < rows; ++r) {
    beta[r] = models[r % 3].beta;
    rho_0[r] = models[r % 3].rho_0;
    eta[r] = 0.02 * static_cast<double>(r % 4);
    sigma2[r] = r % 5 == 0 ? std::numeric_limits<double>::min() : 0.5;
  }
  std::vector<geometry::EnvelopePoint> r1(points.size()), r2(points.size());
  std::vector<geometry::SeparationBound> separation(points.size());
  const EnvelopeRequest request{beta, rho_0, eta, sigma2, 0.05, r1, r2, separation};
  std::vector<geometry::MassStats> mass(rows);
  std::vector<geometry::HeadMagnitudes> magnitudes(rows);
  const geometry::MassOptions mass_options{5, 3};
  const MassRequest mass_request{mass_options, mass, magnitudes};
  CudaSelection gpu(0, chunk_bytes);
  gpu.compute({values.data(), heads, seq, dim, alpha.data(), keys, value_head, grid, radii}, points, curves, &request,
              &mass_request);

  for (std::size_t r = 0; r < rows; ++r) {
    const auto m = static_cast<std::size_t>(keys[r]);
    const geometry::HeadRowView row{
        std::span<const float>(alpha.data() + r * seq, m),
        std::span<const float>(values.data() + static_cast<std::size_t>(value_head[r]) * seq * d, m * d), d};
    const std::vector<std::size_t> n_values = geometry::default_n_grid(m);
    const std::vector<geometry::SelectionMetrics> want = geometry::selection_metrics(row, n_values, options);
    const geometry::ReconstructedEnvelopes envelopes = geometry::reconstructed_envelopes(
        {row.alpha, geometry::value_norms(row), models[r % 3]}, n_values, eta[r], {d, sigma2[r], 0.05});
    // R2's tails take exp, within 2 ulps of the CPU's: sums of at most M of them within 4 M u.
    // The entropy's terms take log, alike.
    const double tolerance = 4.0 * static_cast<double>(m) * std::numeric_limits<double>::epsilon() / 2;
    const geometry::MassStats want_mass = geometry::mass_stats(row.alpha, mass_options);
    EXPECT_EQ(mass[r].sink_mass, want_mass.sink_mass) << r;
    EXPECT_EQ(mass[r].last_mass, want_mass.last_mass) << r;
    EXPECT_EQ(mass[r].recency_mass, want_mass.recency_mass) << r;
    EXPECT_EQ(mass[r].top_k_mass, want_mass.top_k_mass) << r;
    EXPECT_NEAR(mass[r].normalised_entropy, want_mass.normalised_entropy,
                tolerance * (1.0 + want_mass.normalised_entropy))
        << r;
    const geometry::HeadMagnitudes want_magnitudes = geometry::head_magnitudes(row);
    EXPECT_EQ(magnitudes[r].sink, want_magnitudes.sink) << r;
    EXPECT_EQ(magnitudes[r].last, want_magnitudes.last) << r;
    EXPECT_EQ(magnitudes[r].rest, want_magnitudes.rest) << r;
    for (std::size_t g = 0; g < n_values.size(); ++g) {
      SCOPED_TRACE("row " + std::to_string(r) + " (M = " + std::to_string(m) + "), N = " + std::to_string(n_values[g]));
      const std::size_t at = r * grid.size() + g;
      geometry::testing::expect_same_selection(points[at], curves.data() + at * radii.size(), want[g]);
      EXPECT_TRUE(geometry::testing::same_envelope_point(r1[at], envelopes.r1[g]));
      EXPECT_TRUE(geometry::testing::same_envelope_point(r2[at], envelopes.r2.points[g]));
      geometry::testing::expect_same_separation(separation[at], envelopes.r2.separation[g], tolerance);
    }
  }
}

TEST(CudaSelection, MatchesTheCpuBitForBit) {
  if (!gpu_visible()) GTEST_SKIP() << "no GPU visible";
  expect_gpu_matches_cpu(3, 700, 64, {2, 3, 17, 130, 129, 700, 500, 700, 301});
}

TEST(CudaSelection, MatchesTheCpuAcrossChunksOfRows) {
  if (!gpu_visible()) GTEST_SKIP() << "no GPU visible";
  // About 22 MB of working memory per row of 12000 keys: chunks of 256 MiB hold about twelve rows.
  std::vector<int> keys(130);
  for (std::size_t r = 0; r < keys.size(); ++r) keys[r] = 12000 - static_cast<int>(r) * 37;
  expect_gpu_matches_cpu(2, 12000, 16, keys, std::uint64_t{256} << 20);
}

// analyze's observer with its selection metrics and envelopes on the GPU against analyze_row
// head by head: the same bits (the short rows' selection, by the Gram method, left to the
// CPU), but for R2's tail probabilities, which take exp: r2_recall_lo, r2_fp_hi and
// r2_separation_prob are sums of at most M tails, each within 2 ulps of the CPU's, so they hold
// within 4 M u of 1 + their size; the entropy's terms take log, alike.
TEST(CudaSelection, AnalyzerRecordMatchesPerHeadAnalysis) {
  if (!gpu_visible()) GTEST_SKIP() << "no GPU visible";
  constexpr int kKeys = 200;
  const RecordSchema schema = make_record_schema(kKeys, false);
  const std::size_t fields = schema.per_n_fields.size();
  const double tolerance = 4.0 * kKeys * std::numeric_limits<double>::epsilon() / 2;
  for (const int kv_heads : {2, kHeads}) {
    const AnalyzedSequence s = analyze_sequence(
        {0, 5, 99, 127, 199}, kv_heads, {}, [] { return make_gpu_row_parts(0); }, kKeys);
    ASSERT_EQ(s.analyzed.per_n.size(), s.expected.per_n.size());
    for (std::size_t i = 0; i < s.expected.per_n.size(); ++i) {
      const std::string& name = schema.per_n_fields[i % fields];
      const double want = s.expected.per_n[i];
      const double got = s.analyzed.per_n[i];
      if (std::isnan(got) && std::isnan(want)) continue;  // an N beyond the row's keys
      if (name == "r2_recall_lo" || name == "r2_fp_hi" || name == "r2_separation_prob") {
        EXPECT_NEAR(got, want, tolerance * (1.0 + std::abs(want))) << name << " at " << i;
      } else {
        EXPECT_EQ(got, want) << name << " at " << i;
      }
    }
    ASSERT_EQ(s.analyzed.per_row.size(), s.expected.per_row.size());
    const std::size_t row_fields = schema.per_row_fields.size();
    for (std::size_t i = 0; i < s.expected.per_row.size(); ++i) {
      const std::string& name = schema.per_row_fields[i % row_fields];
      const double want = s.expected.per_row[i];
      const double got = s.analyzed.per_row[i];
      if (std::isnan(got) && std::isnan(want)) continue;  // a field the row has no value for
      // The entropy is a sum of M terms that take the GPU's log.
      if (name == "entropy") {
        EXPECT_NEAR(got, want, tolerance * (1.0 + std::abs(want))) << name << " at " << i;
      } else {
        EXPECT_EQ(got, want) << name << " at " << i;
      }
    }
  }
}

}  // namespace
}  // namespace attngeom
