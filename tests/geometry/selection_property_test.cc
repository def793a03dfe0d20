// Property test: the fast sweeps (Gram, all N; direct, on the N grid) against the naive
// from-scratch oracle on random rows with ties, masked keys and zero vectors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "geometry/selection_metrics.h"
#include "naive_selection.h"
#include "random_rows.h"

namespace attngeom::geometry {
namespace {

constexpr double kRelativeTolerance = 1e-12;  // the done-when criterion for radii

struct Discrepancy {
  double worst_radius_error = 0.0;  // relative
  std::size_t count_mismatches = 0;
};

void expect_close(double fast, double naive, double scale, const char* what, std::size_t n, Discrepancy& d) {
  const double error = std::abs(fast - naive) / std::max(scale, 1e-300);
  d.worst_radius_error = std::max(d.worst_radius_error, fast == naive ? 0.0 : error);
  EXPECT_LE(error, kRelativeTolerance) << what << " at N = " << n << ": fast " << fast << " naive " << naive;
}

void compare(const SelectionMetrics& fast, const SelectionMetrics& naive, double value_scale, Discrepancy& d) {
  const std::size_t n = naive.n;
  ASSERT_EQ(fast.n, n);
  const bool counts_equal = fast.unselected_inside_r_max == naive.unselected_inside_r_max &&
                            fast.selected_inside_r_min == naive.selected_inside_r_min;
  d.count_mismatches += !counts_equal;
  EXPECT_TRUE(counts_equal) << "N = " << n << " FP " << fast.unselected_inside_r_max << " vs "
                            << naive.unselected_inside_r_max << ", TP " << fast.selected_inside_r_min << " vs "
                            << naive.selected_inside_r_min;
  EXPECT_EQ(fast.precision, naive.precision) << "N = " << n;
  EXPECT_EQ(fast.recall, naive.recall) << "N = " << n;
  EXPECT_EQ(fast.f_score, naive.f_score) << "N = " << n;
  EXPECT_EQ(fast.a_in_min, naive.a_in_min) << "N = " << n;
  EXPECT_EQ(fast.a_out_max, naive.a_out_max) << "N = " << n;
  expect_close(fast.r_max, naive.r_max, naive.r_max, "r_max", n, d);
  expect_close(fast.r_min, naive.r_min, naive.r_min, "r_min", n, d);
  expect_close(fast.s_norm, naive.s_norm, naive.s_norm, "||s_N||", n, d);
  expect_close(fast.margin, naive.margin, std::max(naive.r_min, naive.r_max), "margin", n, d);
  EXPECT_NEAR(fast.f_best, naive.f_best, kRelativeTolerance) << "N = " << n;
  expect_close(fast.f_best_radius, naive.f_best_radius, naive.f_best_radius, "F_best radius", n, d);
  EXPECT_NEAR(fast.cos_sink, naive.cos_sink, kRelativeTolerance) << "N = " << n;
  EXPECT_NEAR(fast.cos_last, naive.cos_last, kRelativeTolerance) << "N = " << n;
  const SeparationWitness& fw = fast.witness;
  const SeparationWitness& nw = naive.witness;
  expect_close(fw.min_selected_weighted_norm, nw.min_selected_weighted_norm, nw.min_selected_weighted_norm,
               "min alpha_i ||v_i||", n, d);
  // Inner products cancel; compare them on the scale of the products that form them.
  const double product_scale = value_scale * (naive.s_norm + value_scale);
  EXPECT_NEAR(fw.max_unselected_projection, nw.max_unselected_projection, kRelativeTolerance * product_scale);
  EXPECT_NEAR(fw.min_selected_cross_projection, nw.min_selected_cross_projection, kRelativeTolerance * product_scale);
  // At N = 1, s_N = p_1 and <p_1, s_N - p_1> is exactly 0; a rounded negative value would
  // refuse R3's certificate where it holds.
  if (n == 1) {
    EXPECT_EQ(fw.min_selected_cross_projection, 0.0);
  }
  ASSERT_EQ(fast.at_normalised_radius.size(), naive.at_normalised_radius.size());
  for (std::size_t g = 0; g < naive.at_normalised_radius.size(); ++g) {
    const BallScores& fb = fast.at_normalised_radius[g];
    const BallScores& nb = naive.at_normalised_radius[g];
    EXPECT_EQ(fb.selected_inside, nb.selected_inside) << "N = " << n << " radius " << g;
    EXPECT_EQ(fb.unselected_inside, nb.unselected_inside) << "N = " << n << " radius " << g;
    EXPECT_EQ(fb.f_score, nb.f_score) << "N = " << n << " radius " << g;
  }
}

double max_value_norm(const HeadRowView& row) {
  double worst = 0.0;
  for (std::size_t k = 0; k < row.keys(); ++k) {
    double sq = 0.0;
    for (const float x : row.value(k)) sq += static_cast<double>(x) * x;
    worst = std::max(worst, std::sqrt(sq));
  }
  return worst;
}

TEST(SelectionProperty, FastSweepsMatchNaiveOracleOnThousandRandomRows) {
  constexpr std::size_t kCases = 1000;
  std::mt19937_64 rng(20260202);
  std::uniform_int_distribution<std::size_t> keys_dist(2, 300);
  std::uniform_int_distribution<std::size_t> dim_dist(1, 64);
  std::uniform_real_distribution<double> share(0.0, 0.3);
  const SelectionOptions options;
  Discrepancy worst;
  std::size_t points = 0;
  for (std::size_t c = 0; c < kCases; ++c) {
    const std::size_t keys = keys_dist(rng);
    const std::size_t dim = dim_dist(rng);
    const testing::RandomRowTraits traits{share(rng), share(rng), share(rng)};
    const testing::OwnedRow owned = testing::random_row(rng, keys, dim, traits);
    const HeadRowView row = owned.view();
    const double scale = max_value_norm(row);
    SCOPED_TRACE("case " + std::to_string(c) + ": M = " + std::to_string(keys) + ", d = " + std::to_string(dim));

    const std::vector<std::size_t> all = every_n(keys);
    const std::vector<SelectionMetrics> gram =
        selection_metrics(row, all, {options.normalised_radii, ProjectionMethod::kGram});
    const std::vector<SelectionMetrics> naive_all = oracle::naive_selection_metrics(row, all, options.normalised_radii);
    ASSERT_EQ(gram.size(), all.size());
    for (std::size_t i = 0; i < all.size(); ++i) compare(gram[i], naive_all[i], scale, worst);
    // The direct (grid) method against the same oracle values.
    const std::vector<std::size_t> grid = default_n_grid(keys);
    const std::vector<SelectionMetrics> direct =
        selection_metrics(row, grid, {options.normalised_radii, ProjectionMethod::kDirect});
    for (std::size_t i = 0; i < grid.size(); ++i) compare(direct[i], naive_all[grid[i] - 1], scale, worst);
    points += all.size() + grid.size();
    if (HasFailure()) break;
  }
  std::printf(
      "[selection property] %zu cases, %zu (row, N) points: worst relative radius error %.3g, count mismatches %zu\n",
      kCases, points, worst.worst_radius_error, worst.count_mismatches);
}

}  // namespace
}  // namespace attngeom::geometry
