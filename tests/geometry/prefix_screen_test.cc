// The maximum cosine deviations of rows over nested prefixes of one value array, screened
// together (prefix_screen.h), against each row's own screen: equal bit for bit, with prefixes
// inside a tile, on tile edges and past them, zero vectors, and nearly equal vectors (whose
// crowded deviations send a row back to its own screen); and analyze_values of such rows
// against each row's analyze_values.
#include "geometry/prefix_screen.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "geometry/row_analysis.h"
#include "random_rows.h"
#include "util/error.h"

namespace attngeom::geometry {
namespace {

const std::vector<std::size_t> kKeys = {1, 2, 40, 255, 256, 300, 512, 513, 700};

std::vector<CosineModel> models_for(std::size_t rows) {
  const CosineModel kinds[] = {{0.1, 0.3}, {0.0, -0.2}, {std::numeric_limits<double>::infinity(), 0.0}, {2.0, 0.9}};
  std::vector<CosineModel> out;
  for (std::size_t r = 0; r < rows; ++r) out.push_back(kinds[r % 4]);
  return out;
}

// A row of its own weights over the first `keys` of `row`'s values.
testing::OwnedRow prefix_row(std::mt19937_64& rng, const testing::OwnedRow& row, std::size_t keys) {
  testing::OwnedRow out = testing::random_row(rng, keys, row.dim, {});
  out.values.assign(row.values.begin(), row.values.begin() + static_cast<std::ptrdiff_t>(keys * row.dim));
  return out;
}

void expect_each_rows_own_maximum(std::mt19937_64& rng, const testing::OwnedRow& row, const std::string& what) {
  const UnitRows units = unit_rows(row.view());
  const std::vector<CosineModel> models = models_for(kKeys.size());
  const std::vector<double> shared = prefix_max_deviations(units, kKeys, models, fp32_pair_products());
  for (std::size_t r = 0; r < kKeys.size(); ++r) {
    const UnitRows prefix = prefix_units(units, kKeys[r]);
    const testing::OwnedRow alone = prefix_row(rng, row, kKeys[r]);  // UnitRows points into it
    const UnitRows own = unit_rows(alone.view());
    EXPECT_EQ(prefix.rounded, own.rounded) << what;
    EXPECT_EQ(prefix.inverse_norms, own.inverse_norms) << what;
    EXPECT_EQ(prefix.defined, own.defined) << what;
    EXPECT_EQ(shared[r], screened_cosine_deviation(own, models[r], fp32_pair_products()).max_abs)
        << what << ", M = " << kKeys[r];
  }
}

TEST(PrefixScreen, EachRowsMaximumEqualsItsOwnScreen) {
  std::mt19937_64 rng(11);
  expect_each_rows_own_maximum(rng, testing::random_row(rng, 700, 24, {0.0, 0.1, 0.05}), "random, zero vectors");
  testing::OwnedRow similar = testing::random_row(rng, 700, 16, {});
  std::normal_distribution<float> jitter(0.0f, 1e-3f);
  for (float& v : similar.values) v = 1.0f + jitter(rng);
  expect_each_rows_own_maximum(rng, similar, "nearly equal vectors");
}

// analyze_values of rows over growing prefixes equals analyze_values of each row alone.
TEST(PrefixScreen, ValueGeometryOfSeveralRowsEqualsEachRowsOwn) {
  std::mt19937_64 rng(13);
  const testing::OwnedRow row = testing::random_row(rng, 600, 16, {0.0, 0.0, 0.02});
  std::vector<HeadRowView> rows;
  std::vector<testing::OwnedRow> alone;
  for (const std::size_t keys : {3, 257, 512, 600}) alone.push_back(prefix_row(rng, row, keys));
  for (const testing::OwnedRow& r : alone) {  // each row's weights over the one value array
    rows.push_back({r.alpha, std::span<const float>(row.values.data(), r.values.size()), r.dim});
  }
  const std::vector<ValueGeometry> together = analyze_values(rows);
  ASSERT_EQ(together.size(), rows.size());
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const ValueGeometry own = analyze_values(rows[r]);
    EXPECT_EQ(together[r].keys, own.keys);
    EXPECT_EQ(together[r].rho_0, own.rho_0);
    EXPECT_EQ(together[r].model.beta, own.model.beta);
    EXPECT_EQ(together[r].deviation.max_abs, own.deviation.max_abs) << "row " << r;
    EXPECT_EQ(together[r].deviation.sigma2, own.deviation.sigma2);
    EXPECT_EQ(together[r].deviation.pairs, own.deviation.pairs);
  }
  std::swap(rows[1], rows[2]);  // keys must not shrink
  EXPECT_THROW(analyze_values(rows), InputError);
}

}  // namespace
}  // namespace attngeom::geometry
