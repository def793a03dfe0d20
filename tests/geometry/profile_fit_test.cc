// Four-phase profile fit: planted breakpoints and parameters are recovered.
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "geometry/profile_fit.h"
#include "geometry/synthetic.h"
#include "util/error.h"

namespace attngeom::geometry {
namespace {

TEST(FourPhaseFit, RecoversPlantedPhasesOfTheGenerator) {
  const std::size_t keys = 513;  // L = 512: b1 = 256, b2 = 461
  const FourPhaseShape shape;  // the default profile
  const std::vector<double> row = attention_profile({}, keys);
  const FourPhaseFit fit = fit_four_phase(row);
  std::printf("[four-phase fit] exact row: b1 %zu (planted 256), b2 %zu (planted 461), rate %.4f (planted %.4f), rmse %.3g\n",
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
