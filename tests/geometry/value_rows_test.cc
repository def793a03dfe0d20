// ValueRows: the value geometry of many rows over one kv head's values equals analyze_values of
// each row alone, bit for bit (norms, rho_0, the lag curve and its fit, the model, the
// deviations), on rows of every length class (no content key, fewer keys than lags, explicit
// tau_max beyond a row's lags), zero vectors (the sink's too), and a head dimension that is
// not a multiple of the kernel's lanes; the band's and the deviations' parts may run in any
// order, and the maximum deviations come the same from each row's screen or the shared maxima
// (beside which sigma2's sums share the rows' full blocks of keys), also through a screen whose
// every product is off by up to its stated bound.
#include "geometry/value_rows.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "geometry/pair_products.h"
#include "random_rows.h"
#include "util/error.h"

namespace attngeom::geometry {
namespace {

void expect_same_values(const ValueGeometry& got, const ValueGeometry& want, const std::string& where) {
  EXPECT_EQ(got.keys, want.keys) << where;
  EXPECT_EQ(got.norms.sink_norm, want.norms.sink_norm) << where;
  EXPECT_EQ(got.norms.mean_norm, want.norms.mean_norm) << where;
  EXPECT_EQ(got.norms.cv, want.norms.cv) << where;
  EXPECT_EQ(got.norms.lambda, want.norms.lambda) << where;
  EXPECT_EQ(got.rho_0, want.rho_0) << where;
  EXPECT_EQ(got.lag.mean_cosine, want.lag.mean_cosine) << where;
  EXPECT_EQ(got.lag.negative_pair_share, want.lag.negative_pair_share) << where;
  EXPECT_EQ(got.lag.negative_lag_share, want.lag.negative_lag_share) << where;
  EXPECT_EQ(got.lag.fit.beta, want.lag.fit.beta) << where;
  EXPECT_EQ(got.lag.fit.mae, want.lag.fit.mae) << where;
  EXPECT_EQ(got.lag.fit.r_squared, want.lag.fit.r_squared) << where;
  EXPECT_EQ(got.model.beta, want.model.beta) << where;
  EXPECT_EQ(got.model.rho_0, want.model.rho_0) << where;
  EXPECT_EQ(got.deviation.max_abs, want.deviation.max_abs) << where;
  EXPECT_EQ(got.deviation.sigma2, want.deviation.sigma2) << where;
  EXPECT_EQ(got.deviation.pairs, want.deviation.pairs) << where;
}

// Values that drift from key to key (so the lag curve decays rather than sitting at zero),
// with some zero vectors; the sink's zero when asked.
testing::OwnedRow drifting_values(std::mt19937_64& rng, std::size_t keys, std::size_t dim, bool zero_sink) {
  testing::OwnedRow row = testing::random_row(rng, keys, dim, {0.0, 0.0, 0.05});
  for (std::size_t k = 2; k < keys; ++k) {
    for (std::size_t t = 0; t < dim; ++t) {
      float& v = row.values[k * dim + t];
      if (v != 0.0f) v = 0.8f * row.values[(k - 1) * dim + t] + 0.6f * v;
    }
  }
  if (zero_sink) std::fill(row.values.begin(), row.values.begin() + static_cast<std::ptrdiff_t>(dim), 0.0f);
  return row;
}

ValueGeometry alone(const testing::OwnedRow& longest, std::size_t keys, const RowAnalysisOptions& options) {
  const std::vector<float> alpha(keys, 1.0f / static_cast<float>(keys));
  const HeadRowView row{alpha, std::span<const float>(longest.values).first(keys * longest.dim), longest.dim};
  return analyze_values(row, options);
}

// Products off by as much as `bound` allows (and their rounding): the exact product of the
// rounded units moved by -bound or +bound, picked by a hash of the pair, so that true extrema
// are screened as far inward, and their rivals as far outward, as the bound allows.
class SkewedUnits final : public LoadedUnits {
 public:
  SkewedUnits(std::span<const float> units, std::size_t count, std::size_t dim, double bound)
      : units_(units.begin(), units.end()), count_(count), dim_(dim), bound_(bound) {}
  void tile(std::size_t i0, std::size_t j0, float* out) override {
    for (std::size_t a = 0; a < kTile; ++a) {
      for (std::size_t b = 0; b < kTile; ++b) {
        const std::size_t i = i0 + a;
        const std::size_t l = j0 + b;
        double dot = 0.0;
        for (std::size_t t = 0; i < count_ && l < count_ && t < dim_; ++t) {
          dot += static_cast<double>(units_[i * dim_ + t]) * units_[l * dim_ + t];
        }
        const std::uint64_t hash = (i * 0x9E3779B97F4A7C15ull) ^ (l * 0xC2B2AE3D27D4EB4Full);
        out[a * kTile + b] = static_cast<float>((hash >> 40) % 2 == 0 ? dot - bound_ : dot + bound_);
      }
    }
  }
  double error_bound() const override { return bound_ + fp32_product_error_bound(dim_); }

 private:
  std::vector<float> units_;
  std::size_t count_;
  std::size_t dim_;
  double bound_;
};

class SkewedProducts final : public PairProducts {
 public:
  explicit SkewedProducts(double bound) : bound_(bound) {}
  std::unique_ptr<LoadedUnits> load(std::span<const float> units, std::size_t count, std::size_t dim) const override {
    return std::make_unique<SkewedUnits>(units, count, dim, bound_);
  }

 private:
  double bound_;
};

// Parts 0..count-1, last first.
std::vector<std::size_t> backwards(std::size_t count) {
  std::vector<std::size_t> parts(count);
  for (std::size_t p = 0; p < count; ++p) parts[p] = count - 1 - p;
  return parts;
}

// Every row's geometry from ValueRows, its parts run last first.
std::vector<ValueGeometry> geometry_of(ValueRows& rows, std::size_t count) {
  for (const std::size_t p : backwards(rows.band_parts())) rows.compute_band(p);
  rows.finish_band();
  std::vector<ValueGeometry> geometry;  // [rows]
  for (std::size_t r = 0; r < count; ++r) geometry.push_back(rows.row(r));
  if (rows.deviation_parts() > 0) {
    for (const std::size_t p : backwards(rows.deviation_parts())) rows.compute_deviations(p, geometry);
    rows.finish_deviations(geometry);
  }
  return geometry;
}

void expect_rows_match_alone(const testing::OwnedRow& longest, const std::vector<std::size_t>& keys,
                             const RowAnalysisOptions& options, const std::string& where) {
  for (const DeviationMethod method : {DeviationMethod::kPerRow, DeviationMethod::kSharedMaxima}) {
    ValueRows rows(longest.view(), keys, options, method);
    EXPECT_EQ(rows.deviation_parts() > 0, method == DeviationMethod::kSharedMaxima && options.bounds) << where;
    const std::vector<ValueGeometry> geometry = geometry_of(rows, keys.size());
    for (std::size_t r = 0; r < keys.size(); ++r) {
      expect_same_values(geometry[r], alone(longest, keys[r], options),
                         where + (method == DeviationMethod::kPerRow ? ", per row" : ", shared maxima") +
                             ", M = " + std::to_string(keys[r]));
    }
  }
}

TEST(ValueRows, EachRowEqualsItsValueGeometryAlone) {
  std::mt19937_64 rng(41);
  const std::vector<std::size_t> keys = {1, 2, 3, 9, 17, 40, 64, 65, 129, 200, 257, 512, 1100, 2200};
  for (const std::size_t dim : {24, 32}) {
    for (const bool zero_sink : {false, true}) {
      const testing::OwnedRow longest = drifting_values(rng, keys.back(), dim, zero_sink);
      for (const std::size_t max_lag : {0, 5, 100}) {  // 0: the default min(64, L/4)
        for (const bool bounds : {true, false}) {
          RowAnalysisOptions options;
          options.lag.max_lag = max_lag;
          options.bounds = bounds;
          expect_rows_match_alone(longest, keys, options,
                                  "d = " + std::to_string(dim) + (zero_sink ? ", zero sink" : "") +
                                      ", max_lag = " + std::to_string(max_lag) + (bounds ? ", bounds" : ""));
        }
      }
    }
  }
}

// The shared maxima through a screen whose products stray as far as it says they may: every
// row's max_abs still equals its own fp32 screen's.
TEST(ValueRows, SharedMaximaAreExactThroughACoarseScreen) {
  std::mt19937_64 rng(53);
  std::vector<std::size_t> keys = {2, 5, 255, 256, 257};  // and every 8th length up to 1025
  for (std::size_t m = 262; m <= 1025; m += 8) keys.push_back(m);
  const testing::OwnedRow longest = drifting_values(rng, keys.back(), 16, false);
  for (const double bound : {0.002, 0.05, 0.3}) {
    const SkewedProducts skewed(bound);
    RowAnalysisOptions options;
    options.pair_products = &skewed;
    ValueRows rows(longest.view(), keys, options, DeviationMethod::kSharedMaxima);
    ASSERT_GT(rows.deviation_parts(), 0u);
    const std::vector<ValueGeometry> geometry = geometry_of(rows, keys.size());
    for (std::size_t r = 0; r < keys.size(); ++r) {
      EXPECT_EQ(geometry[r].deviation.max_abs, alone(longest, keys[r], {}).deviation.max_abs)
          << "bound " << bound << ", M = " << keys[r];
    }
  }
}

TEST(ValueRows, OneRowAndRepeatedLengths) {
  std::mt19937_64 rng(43);
  const testing::OwnedRow longest = drifting_values(rng, 300, 16, false);
  expect_rows_match_alone(longest, {300}, {}, "one row");
  expect_rows_match_alone(longest, {50, 50, 300, 300}, {}, "repeated lengths");
}

TEST(ValueRows, RowLengthsThatDoNotAscendToTheLongestAreRefused) {
  std::mt19937_64 rng(47);
  const testing::OwnedRow longest = drifting_values(rng, 40, 8, false);
  const RowAnalysisOptions options;
  for (const std::vector<std::size_t>& keys : std::vector<std::vector<std::size_t>>{{}, {0, 40}, {30, 20, 40}, {20}}) {
    EXPECT_THROW(ValueRows(longest.view(), keys, options), InputError);
  }
}

}  // namespace
}  // namespace attngeom::geometry
