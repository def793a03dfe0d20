// The GPU's selection (ops/cuda_selection_kernels.cu) run step by step on the CPU: the shared
// functions of geometry/selection_step.h in the GPU's arrangement (the selected offsets sorted
// whole by the bitonic network in place of the partial radix sort, s_N one coordinate at a
// time, each projection one fused sum over d, the norms in fixed lanes) against
// selection_metrics's direct method, bit for bit. What the GPU adds to this is which thread
// takes which index, and its passes shared among a block's threads
// (tests/unit/cuda_selection_test.cc).
#include "geometry/selection_step.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "geometry/selection_order.h"
#include "random_rows.h"
#include "same_geometry.h"

namespace attngeom::geometry {
namespace {

using testing::OwnedRow;
using testing::random_row;
using testing::RandomRowTraits;

// The GPU's sort of the selected offsets: every exchange of the bitonic network in order, over
// the values padded with +inf to a power of two (values holds that many).
void bitonic_sort(double* values, std::size_t count) {
  std::size_t width = 1;
  while (width < count) width <<= 1;
  std::fill(values + count, values + width, HUGE_VAL);
  for (std::size_t k = 2; k <= width; k <<= 1) {
    for (std::size_t j = k >> 1; j > 0; j >>= 1) {
      for (std::size_t i = 0; i < width; ++i) bitonic_exchange(values, i, j, k);
    }
  }
}

struct Emulated {
  std::vector<SelectionPoint> points;  // [G]
  std::vector<BallScores> curves;      // [G, radii]
};

Emulated emulate_gpu(const HeadRowView& row, const std::vector<std::size_t>& n_grid, const std::vector<double>& radii) {
  const std::size_t keys = row.keys();
  const std::size_t dim = row.dim;
  const std::size_t grid = n_grid.size();
  const SelectionOrder order = selection_order(row.alpha);  // what the GPU's stable radix sort gives
  std::vector<int> key(keys);
  std::vector<double> alpha(keys), sq_norms(keys), minima(keys);
  for (std::size_t p = 0; p < keys; ++p) {
    key[p] = static_cast<int>(order.order[p]);
    alpha[p] = row.alpha[order.order[p]];
    sq_norms[p] = squared_norm_in_lanes(row.values.data() + order.order[p] * dim, dim);
  }
  weighted_norm_minima(alpha.data(), sq_norms.data(), keys, minima.data());
  const std::vector<int> n_values(n_grid.begin(), n_grid.end());
  std::vector<double> sums(grid * dim);
  for (std::size_t t = 0; t < dim; ++t) {
    grow_sums_at(alpha.data(), key.data(), row.values.data(), dim, t, n_values.data(), grid, keys, sums.data());
  }
  std::vector<double> dots(grid * keys);
  for (std::size_t g = 0; g < grid; ++g) {
    for (std::size_t p = 0; p < keys; ++p) {
      dots[g * keys + p] = projection_of(row.values.data() + order.order[p] * dim, sums.data() + g * dim, dim);
    }
  }
  const PositionedView<int> view{keys,
                                 dim,
                                 alpha.data(),
                                 sq_norms.data(),
                                 minima.data(),
                                 key.data(),
                                 row.values.data(),
                                 order.rank.front(),
                                 order.rank.back()};
  std::vector<double> offset(keys), recomputed_d2(keys), selected(2 * keys);
  std::vector<std::size_t> recomputed(keys), tally(keys);
  Emulated out{std::vector<SelectionPoint>(grid), std::vector<BallScores>(grid * radii.size())};
  const auto sort_from = [](double* values, std::size_t count, std::size_t) { bitonic_sort(values, count); };
  for (std::size_t g = 0; g < grid; ++g) {
    SelectionScratch scratch{offset.data(), recomputed.data(), recomputed_d2.data(), 0, selected.data(), tally.data()};
    evaluate_selection(view, n_grid[g], dots.data() + g * keys, sums.data() + g * dim, radii.data(), radii.size(),
                       scratch, sort_from, out.points[g], out.curves.data() + g * radii.size());
  }
  return out;
}

void expect_gpu_arrangement_matches(const OwnedRow& owned) {
  const HeadRowView row = owned.view();
  SelectionOptions options;
  options.method = ProjectionMethod::kDirect;
  const std::vector<std::size_t> grid = default_n_grid(row.keys());
  const std::vector<SelectionMetrics> want = selection_metrics(row, grid, options);
  const Emulated got = emulate_gpu(row, grid, options.normalised_radii);
  ASSERT_EQ(want.size(), grid.size());
  for (std::size_t g = 0; g < grid.size(); ++g) {
    SCOPED_TRACE("M = " + std::to_string(row.keys()) + ", d = " + std::to_string(row.dim) +
                 ", N = " + std::to_string(grid[g]));
    testing::expect_same_selection(got.points[g], got.curves.data() + g * options.normalised_radii.size(), want[g]);
  }
}

TEST(SelectionStep, GpuArrangementGivesTheCpuBits) {
  std::mt19937_64 rng(91);
  for (const std::size_t keys : {130u, 257u, 700u}) {
    for (const std::size_t dim : {37u, 64u, 128u}) expect_gpu_arrangement_matches(random_row(rng, keys, dim, {}));
  }
}

TEST(SelectionStep, GpuArrangementGivesTheCpuBitsOnTiesZerosAndDuplicates) {
  std::mt19937_64 rng(92);
  const RandomRowTraits awkward{0.3, 0.2, 0.05};
  for (const std::size_t keys : {129u, 300u}) {
    OwnedRow row = random_row(rng, keys, 24, awkward);
    // Keys that repeat key 3's value (tied or not): distances that cancel, recomputed from the vectors.
    for (std::size_t k = 10; k < keys; k += 17) {
      std::copy_n(row.values.begin() + 3 * 24, 24, row.values.begin() + static_cast<std::ptrdiff_t>(k * 24));
    }
    expect_gpu_arrangement_matches(row);
  }
}

TEST(SelectionStep, GpuArrangementGivesTheCpuBitsWithOneDominantKey) {
  std::mt19937_64 rng(93);
  OwnedRow row = random_row(rng, 200, 48, {});
  for (float& a : row.alpha) a *= 1e-3f;
  row.alpha[57] += 1.0f - 1e-3f;  // s_N sits near p_57 at every N: its distance cancels
  expect_gpu_arrangement_matches(row);
}

// The CPU refuses such a row before its selection; on the GPU the search for F's best radius
// must still end, so that the CPU gets the row back and says why (analysis/gpu_row_parts.cc).
TEST(SelectionStep, ANanWeightEndsEveryEvaluation) {
  std::mt19937_64 rng(95);
  OwnedRow row = random_row(rng, 160, 16, {});
  row.alpha[3] = std::numeric_limits<float>::quiet_NaN();
  const Emulated got = emulate_gpu(row.view(), default_n_grid(row.alpha.size()), SelectionOptions{}.normalised_radii);
  EXPECT_EQ(got.points.size(), default_n_grid(row.alpha.size()).size());
}

TEST(SelectionStep, BitonicNetworkSortsAscending) {
  std::mt19937_64 rng(94);
  std::uniform_int_distribution<int> pick(-5, 5);
  for (const std::size_t count : {1u, 2u, 3u, 7u, 64u, 300u, 512u}) {
    std::vector<double> v(2 * count);
    for (std::size_t i = 0; i < count; ++i) v[i] = pick(rng) == 0 ? -0.0 : 0.25 * pick(rng);  // ties, signed zeros
    std::vector<double> want(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(count));
    std::sort(want.begin(), want.end());
    bitonic_sort(v.data(), count);
    for (std::size_t i = 0; i < count; ++i) EXPECT_EQ(v[i], want[i]) << "count " << count << ", index " << i;
  }
}

}  // namespace
}  // namespace attngeom::geometry
