// The selection metrics on a GPU (ops/cuda_selection.h) against selection_metrics's direct
// method on the CPU, bit for bit: the GPU runs the CPU's arithmetic in the CPU's order
// (geometry/selection_step.h, whose arrangement tests/geometry/selection_step_test.cc checks on
// the CPU). Skipped where no GPU is visible.
#include "ops/cuda_selection.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "analysis/gpu_selection.h"
#include "geometry/selection_metrics.h"
#include "ops/cuda_backend.h"
#include "random_rows.h"
#include "same_geometry.h"
#include "sequence_analyzer_harness.h"

namespace attngeom {
namespace {

bool gpu_visible() {
  std::string why;
  return cuda_device_count(why) > 0;
}

// Rows of random weights (ties, zeros) over keys 0..keys[r]-1 of value head r % heads, whose
// values repeat one vector here and there (distances that cancel) and hold a zero vector.
void expect_gpu_matches_cpu(int heads, int seq, int dim, const std::vector<int>& keys) {
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
  CudaSelection gpu(0);
  gpu.compute({values.data(), heads, seq, dim, alpha.data(), keys, value_head, grid, radii}, points, curves);

  for (std::size_t r = 0; r < rows; ++r) {
    const auto m = static_cast<std::size_t>(keys[r]);
    const geometry::HeadRowView row{
        std::span<const float>(alpha.data() + r * seq, m),
        std::span<const float>(values.data() + static_cast<std::size_t>(value_head[r]) * seq * d, m * d), d};
    const std::vector<std::size_t> n_values = geometry::default_n_grid(m);
    const std::vector<geometry::SelectionMetrics> want = geometry::selection_metrics(row, n_values, options);
    for (std::size_t g = 0; g < n_values.size(); ++g) {
      SCOPED_TRACE("row " + std::to_string(r) + " (M = " + std::to_string(m) + "), N = " + std::to_string(n_values[g]));
      const std::size_t at = r * grid.size() + g;
      geometry::testing::expect_same_selection(points[at], curves.data() + at * radii.size(), want[g]);
    }
  }
}

TEST(CudaSelection, MatchesTheCpuBitForBit) {
  if (!gpu_visible()) GTEST_SKIP() << "no GPU visible";
  expect_gpu_matches_cpu(3, 700, 64, {2, 3, 17, 130, 129, 700, 500, 700, 301});
}

TEST(CudaSelection, MatchesTheCpuAcrossChunksOfRows) {
  if (!gpu_visible()) GTEST_SKIP() << "no GPU visible";
  // About 10 MB of working memory per row of 12000 keys: the 1 GiB chunks hold about a hundred rows.
  std::vector<int> keys(130);
  for (std::size_t r = 0; r < keys.size(); ++r) keys[r] = 12000 - static_cast<int>(r) * 37;
  expect_gpu_matches_cpu(2, 12000, 16, keys);
}

// analyze's observer with its selection metrics on the GPU against analyze_row head by head:
// the same bits, with the short rows (the Gram method) left to the CPU.
TEST(CudaSelection, AnalyzerRecordMatchesPerHeadAnalysisBitForBit) {
  if (!gpu_visible()) GTEST_SKIP() << "no GPU visible";
  for (const int kv_heads : {2, kHeads}) {
    const AnalyzedSequence s = analyze_sequence({0, 5, 99, 127, 199}, kv_heads, nullptr, make_gpu_selections(0), 200);
    for (const auto& [got, want] :
         {std::pair(&s.analyzed.per_n, &s.expected.per_n), std::pair(&s.analyzed.per_row, &s.expected.per_row)}) {
      ASSERT_EQ(got->size(), want->size());
      EXPECT_EQ(std::memcmp(got->data(), want->data(), got->size() * sizeof(double)), 0) << kv_heads;
    }
  }
}

}  // namespace
}  // namespace attngeom
