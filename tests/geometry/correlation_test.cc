// Sink vs Recall correlation with seeded bootstrap intervals.
#include "stats/correlation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "util/error.h"

namespace attngeom::geometry {

using stats::pearson;
using stats::sink_recall_correlation;
using stats::SinkRecallCorrelation;
using stats::SinkRecallPoint;
using stats::spearman;
namespace {

TEST(Correlation, KnownValues) {
  const std::vector<double> x = {1, 2, 3, 4, 5};
  const std::vector<double> y = {2, 4, 6, 8, 10};
  const std::vector<double> cubic = {1, 8, 27, 64, 125};
  EXPECT_NEAR(pearson(x, y), 1.0, 1e-12);
  EXPECT_LT(pearson(x, cubic), 1.0);
  EXPECT_NEAR(spearman(x, cubic), 1.0, 1e-12);  // monotone
  const std::vector<double> reversed = {5, 4, 3, 2, 1};
  EXPECT_NEAR(spearman(x, reversed), -1.0, 1e-12);
  const std::vector<double> ties = {1, 1, 2, 2, 3};
  EXPECT_NEAR(spearman(ties, ties), 1.0, 1e-12);
  // Ties take their mid-rank: ranks (1, 2.5, 2.5, 4) against (1, 2, 3, 4) give 3 / sqrt(10).
  EXPECT_NEAR(spearman(std::vector<double>{1, 2, 2, 3}, std::vector<double>{1, 2, 3, 4}), 3.0 / std::sqrt(10.0), 1e-12);
  EXPECT_EQ(pearson(x, std::vector<double>(5, 3.0)), 0.0);  // constant: documented 0
  EXPECT_THROW(pearson(x, std::vector<double>{1, 2}), InputError);
}

TEST(SinkRecall, BootstrapIsSeededAndPeaksWhereTheSignalIs) {
  // 40 heads; R(N) follows rho_0 strongly at N = 3, weakly at N = 1, not at all at N = 8.
  std::mt19937_64 rng(3);
  std::normal_distribution<double> noise(0.0, 1.0);
  const std::vector<std::size_t> n_values = {1, 3, 8};
  std::vector<double> rho_0(40), recall(40 * 3);
  for (std::size_t h = 0; h < 40; ++h) {
    rho_0[h] = noise(rng);
    recall[h * 3 + 0] = 0.3 * rho_0[h] + noise(rng);
    recall[h * 3 + 1] = rho_0[h] + 0.2 * noise(rng);
    recall[h * 3 + 2] = noise(rng);
  }
  const SinkRecallCorrelation a = sink_recall_correlation(rho_0, recall, n_values, {}, 42);
  const SinkRecallCorrelation b = sink_recall_correlation(rho_0, recall, n_values, {}, 42);
  const SinkRecallCorrelation c = sink_recall_correlation(rho_0, recall, n_values, {}, 43);
  EXPECT_EQ(a.peak_n, 3u);
  ASSERT_EQ(a.points.size(), 3u);
  EXPECT_EQ(a.points[1].pearson.ci_low, b.points[1].pearson.ci_low);  // same seed, same interval
  EXPECT_NE(a.points[1].pearson.ci_low, c.points[1].pearson.ci_low);
  for (const SinkRecallPoint& p : a.points) {
    EXPECT_TRUE(p.pearson.defined);
    EXPECT_LE(p.pearson.ci_low, p.pearson.value);
    EXPECT_GE(p.pearson.ci_high, p.pearson.value);
    EXPECT_LE(p.spearman.ci_low, p.spearman.ci_high);
  }
  EXPECT_GT(a.points[1].pearson.ci_low, 0.9);
  EXPECT_LT(a.points[2].pearson.ci_low, 0.0);  // no signal: the interval straddles 0
  EXPECT_GT(a.points[2].pearson.ci_high, 0.0);
}

// rho_0 = (0, 0, 1), R = (0, 0.5, 1). A resample without head 2, or of head 2 alone, has a
// constant rho_0 (a third of the resamples) and no correlation; every other one puts head 2's
// larger R above the rest, so r > 0. Counting the undefined ones as r = 0 put the lower
// bound at 0.
TEST(SinkRecall, ResamplesWithoutACorrelationAreLeftOut) {
  const std::vector<double> rho_0 = {0.0, 0.0, 1.0};
  const std::vector<double> recall = {0.0, 0.5, 1.0};
  const std::vector<std::size_t> n_values = {2};
  const SinkRecallPoint p = sink_recall_correlation(rho_0, recall, n_values, {.resamples = 400}, 5).points.front();
  ASSERT_TRUE(p.pearson.defined);
  EXPECT_GT(p.pearson.ci_low, 0.0);
  EXPECT_GT(p.spearman.ci_low, 0.0);
  EXPECT_LE(p.pearson.ci_high, 1.0);
}

TEST(SinkRecall, TooFewHeadsAreUndefinedNotNaN) {
  const std::vector<std::size_t> n_values = {1};
  const SinkRecallCorrelation r =
      sink_recall_correlation(std::vector<double>{0.1, 0.2}, std::vector<double>{0.5, 0.7}, n_values, {}, 1);
  EXPECT_FALSE(r.points[0].pearson.defined);
  EXPECT_EQ(r.points[0].pearson.value, 0.0);
  EXPECT_EQ(r.peak_n, 0u);
}

// A head whose rows are all too short for N has NaN recall there. It sits out of that N only;
// an all-NaN column is undefined rather than an endless rank loop (as it once was).
TEST(SinkRecall, HeadsWithoutRecallAtNSitOutOfThatN) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<std::size_t> n_values = {2, 8, 16};
  const std::vector<double> rho_0 = {0.1, 0.4, 0.2, 0.9, 0.5};
  // recall [heads, N]: N = 8 lacks heads 1 and 3, N = 16 lacks every head
  const std::vector<double> recall = {0.2, 0.3, nan, 0.5, nan, nan, 0.1, 0.2, nan, 0.9, nan, nan, 0.4, 0.7, nan};
  const SinkRecallCorrelation r = sink_recall_correlation(rho_0, recall, n_values, {}, 7);
  ASSERT_EQ(r.points.size(), 3u);
  EXPECT_EQ(r.points[0].heads, 5u);
  EXPECT_EQ(r.points[1].heads, 3u);
  EXPECT_EQ(r.points[2].heads, 0u);
  const std::vector<double> rho_kept = {0.1, 0.2, 0.5}, recall_kept = {0.3, 0.2, 0.7};
  ASSERT_TRUE(r.points[1].pearson.defined);
  EXPECT_DOUBLE_EQ(r.points[1].pearson.value, pearson(rho_kept, recall_kept));
  EXPECT_DOUBLE_EQ(r.points[1].spearman.value, spearman(rho_kept, recall_kept));
  EXPECT_TRUE(std::isfinite(r.points[1].pearson.ci_low) && std::isfinite(r.points[1].pearson.ci_high));
  EXPECT_FALSE(r.points[2].pearson.defined);
  EXPECT_FALSE(r.points[2].spearman.defined);
}

}  // namespace
}  // namespace attngeom::geometry
