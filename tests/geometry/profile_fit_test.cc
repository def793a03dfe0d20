// Four-phase profile fit: planted breakpoints and parameters are recovered.
#include "stats/profile_fit.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <span>
#include <vector>

#include "synth/synthetic.h"
#include "util/error.h"

namespace attngeom::geometry {

using stats::fit_four_phase;
using stats::FourPhaseFit;
using stats::FourPhaseFitOptions;
using synth::attention_profile;
using synth::FourPhaseShape;
namespace {

TEST(FourPhaseFit, RecoversPlantedPhasesOfTheGenerator) {
  const std::size_t keys = 513;  // L = 512: b1 = 256, b2 = 461
  const FourPhaseShape shape;    // the default profile
  const std::vector<double> row = attention_profile({}, keys);
  const FourPhaseFit fit = fit_four_phase(row);
  std::printf(
      "[four-phase fit] exact row: b1 %zu (planted 256), b2 %zu (planted 461), rate %.4f (planted %.4f), rmse %.3g\n",
      fit.oscillation_start, fit.recency_start, fit.recency_rate, 1.0 / shape.recency_decay, fit.rmse);
  ASSERT_TRUE(fit.fitted);
  EXPECT_EQ(fit.oscillation_start, 256u);
  EXPECT_EQ(fit.recency_start, 461u);
  EXPECT_DOUBLE_EQ(fit.sink_weight, shape.sink_mass);
  EXPECT_NEAR(fit.plateau_level, row[1], 1e-15);
  EXPECT_NEAR(fit.oscillation_level / fit.plateau_level, shape.oscillation_level, 0.02);
  EXPECT_NEAR(fit.recency_rate, 1.0 / shape.recency_decay, 1e-3 / shape.recency_decay);
  // The band is a sinusoid of relative amplitude a around its level: spread = a level / sqrt(2).
  EXPECT_NEAR(fit.oscillation_spread / fit.oscillation_level, shape.oscillation_amplitude / std::sqrt(2.0), 0.01);
  // Outside the band the model is exact: within 0.1% of the largest weight of the phase.
  for (std::size_t i = 0; i < fit.oscillation_start; ++i) EXPECT_NEAR(fit.curve[i], row[i], 1e-12) << i;
  for (std::size_t i = fit.recency_start; i < keys; ++i) EXPECT_NEAR(fit.curve[i], row[i], 1e-3 * row.back()) << i;
}

TEST(FourPhaseFit, BreakpointsSurviveMultiplicativeNoise) {
  const std::size_t keys = 1025;  // b1 = 512, b2 = 922
  std::vector<double> row = attention_profile({}, keys);
  std::mt19937_64 rng(5);
  std::normal_distribution<double> noise(0.0, 0.05);
  for (double& a : row) a *= std::exp(noise(rng));
  const FourPhaseFit fit = fit_four_phase(row);
  std::printf("[four-phase fit] 5%% noise: b1 %zu (planted 512), b2 %zu (planted 922), relative L1 %.3f\n",
              fit.oscillation_start, fit.recency_start, fit.relative_l1);
  EXPECT_NEAR(static_cast<double>(fit.oscillation_start), 512.0, 8.0);
  EXPECT_NEAR(static_cast<double>(fit.recency_start), 922.0, 8.0);
  EXPECT_LT(fit.relative_l1, 0.15);
}

// The change-point cost of the breakpoints (b1, b2), straight from its definition (header):
// each phase's n log(max(residual variance, floor)), the tail at its best rate of the grid;
// two-pass means, no prefix sums, no screening.
class NaiveBreakpointCost {
 public:
  NaiveBreakpointCost(std::span<const double> row, const FourPhaseFitOptions& o) : row_(row), o_(o) {
    floor_ = std::max(o.variance_floor * constant_sse(1, row.size()) / static_cast<double>(row.size() - 1),
                      std::numeric_limits<double>::min());
    for (std::size_t start = 0; start < row.size(); ++start) tails_.push_back(tail(start));
  }
  double operator()(std::size_t b1, std::size_t b2) const {
    return phase(b1 - 1, constant_sse(1, b1)) + phase(b2 - b1, constant_sse(b1, b2)) + tails_[b2];
  }

 private:
  double phase(std::size_t n, double sse) const {
    return static_cast<double>(n) * std::log(std::max(sse / static_cast<double>(n), floor_));
  }
  double constant_sse(std::size_t begin, std::size_t end) const {
    double mean = 0, sse = 0;
    for (std::size_t i = begin; i < end; ++i) mean += row_[i] / static_cast<double>(end - begin);
    for (std::size_t i = begin; i < end; ++i) sse += (row_[i] - mean) * (row_[i] - mean);
    return sse;
  }
  double tail(std::size_t start) const {
    const double last = static_cast<double>(row_.size() - 1);
    const double ratio =
        std::pow(o_.max_recency_rate / o_.min_recency_rate, 1.0 / static_cast<double>(o_.recency_rate_points - 1));
    double best = std::numeric_limits<double>::infinity();
    for (std::size_t g = 0; g < o_.recency_rate_points; ++g) {
      const double rate = o_.min_recency_rate * std::pow(ratio, static_cast<double>(g));
      // Least squares of y ~ a + b e, e = exp(-rate (L - i)), by centring.
      const std::size_t n = row_.size() - start;
      double e_mean = 0, y_mean = 0;
      for (std::size_t i = start; i < row_.size(); ++i) {
        e_mean += std::exp(-rate * (last - static_cast<double>(i))) / static_cast<double>(n);
        y_mean += row_[i] / static_cast<double>(n);
      }
      double see = 0, sey = 0;
      for (std::size_t i = start; i < row_.size(); ++i) {
        const double e = std::exp(-rate * (last - static_cast<double>(i))) - e_mean;
        see += e * e;
        sey += e * (row_[i] - y_mean);
      }
      const double slope = see > 1e-300 ? sey / see : 0.0;
      double sse = 0;
      for (std::size_t i = start; i < row_.size(); ++i) {
        const double e = std::exp(-rate * (last - static_cast<double>(i))) - e_mean;
        const double r = row_[i] - y_mean - slope * e;
        sse += r * r;
      }
      best = std::min(best, phase(n, sse));
    }
    return best;
  }
  std::span<const double> row_;
  FourPhaseFitOptions o_;
  double floor_ = 0;
  std::vector<double> tails_;  // [M] by start
};

// The screened search returns an exhaustive minimum: no pair costs less than the chosen one,
// within rounding, on rows of every kind (noise levels, flat stretches at the variance floor,
// minimum phase lengths).
TEST(FourPhaseFit, BreakpointsAreTheExhaustiveMinimum) {
  std::mt19937_64 rng(11);
  for (int kind = 0; kind < 5; ++kind) {
    for (const std::size_t min_len : {std::size_t{1}, std::size_t{2}, std::size_t{7}}) {
      const std::size_t keys = 161;
      std::vector<double> row = attention_profile({}, keys);
      std::normal_distribution<double> noise(0.0, kind == 1 ? 0.05 : 1.0);
      std::uniform_real_distribution<double> uniform(0.0, 1.0);
      if (kind == 1 || kind == 2)
        for (double& a : row) a *= std::exp(noise(rng));
      if (kind == 3)
        for (double& a : row) a = uniform(rng);
      if (kind == 4) std::fill(row.begin() + 20, row.begin() + 90, row[20]);  // a flat stretch: residuals at the floor
      FourPhaseFitOptions options;
      options.min_phase_length = min_len;
      const FourPhaseFit fit = fit_four_phase(row, options);
      ASSERT_TRUE(fit.fitted);
      const NaiveBreakpointCost cost(row, options);
      double least = std::numeric_limits<double>::infinity();
      for (std::size_t b1 = 1 + min_len; b1 + 2 * min_len <= keys; ++b1) {
        for (std::size_t b2 = b1 + min_len; b2 + min_len <= keys; ++b2) least = std::min(least, cost(b1, b2));
      }
      EXPECT_LE(cost(fit.oscillation_start, fit.recency_start), least + 1e-9 * std::abs(least))
          << "kind " << kind << ", min_phase_length " << min_len << ": b1 " << fit.oscillation_start << ", b2 "
          << fit.recency_start;
    }
  }
}

TEST(FourPhaseFit, ShortRowsAreNotFitted) {
  const FourPhaseFit fit = fit_four_phase(std::vector<double>{0.5, 0.2, 0.2, 0.1});
  EXPECT_FALSE(fit.fitted);
  EXPECT_TRUE(fit.curve.empty());
  EXPECT_THROW(fit_four_phase(std::vector<double>{0.5, NAN, 0.2, 0.1, 0.1, 0.1, 0.1}), InputError);
}

TEST(FourPhaseFit, FlatRowHasNoNaN) {
  const FourPhaseFit fit = fit_four_phase(std::vector<double>(64, 1.0 / 64));
  ASSERT_TRUE(fit.fitted);
  EXPECT_NEAR(fit.rmse, 0.0, 1e-15);
  EXPECT_TRUE(std::isfinite(fit.recency_floor) && std::isfinite(fit.recency_amplitude));
}

}  // namespace
}  // namespace attngeom::geometry
