// analyze's bf16 deviation screen against the double Gram: the maximum deviation must come out
// exact (the screen only picks the pairs to recompute), the averages within bf16 rounding.
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "analysis/bf16_pair_products.h"
#include "geometry/cosine_model.h"

namespace attngeom {
namespace {

TEST(Bf16PairProducts, ScreenKeepsTheMaximumDeviationExact) {
  std::mt19937_64 rng(3);
  std::normal_distribution<float> gauss(0.0f, 1.0f);
  constexpr std::size_t kDim = 64;
  const auto products = make_bf16_pair_products(kDim);
  for (const std::size_t keys : {5, 256, 700}) {
    std::vector<float> alpha(keys, 1.0f / static_cast<float>(keys));
    std::vector<float> values(keys * kDim);
    for (float& v : values) v = gauss(rng);
    for (std::size_t t = 0; t < kDim; ++t) values[3 * kDim + t] = 0.0f;  // one zero vector
    const geometry::HeadRowView row{alpha, values, kDim};
    const geometry::RowGram gram = geometry::row_gram(row);
    for (const geometry::CosineModel model : {geometry::CosineModel{0.2, 0.1}, geometry::CosineModel{0.0, 0.5}}) {
      const geometry::CosineDeviation reference = geometry::cosine_deviation(row, gram, model);
      const geometry::CosineDeviation screened =
          geometry::screened_cosine_deviation(geometry::unit_rows(row), model, *products);
      EXPECT_EQ(screened.pairs, reference.pairs);
      EXPECT_NEAR(screened.max_abs, reference.max_abs, 1e-14) << "M=" << keys;
      // Each screened delta is within the kernel's bound; sigma^2 = d mean(delta^2) moves by at
      // most d * bound * (2 max|delta| + bound).
      const double bound = products->error_bound(kDim) + 0x1p-22;
      // The sums run in float over at most one tile row: gamma_kTile relative on top.
      const double sums = geometry::summation_error_factor(geometry::LoadedUnits::kTile, 0x1p-24);
      EXPECT_NEAR(screened.sigma2, reference.sigma2,
                  kDim * bound * (2.0 * reference.max_abs + bound) + 2.0 * sums * reference.sigma2);
    }
  }
}

// analyze screens many rows at once on the attention workers through one kernel: every
// thread's tiles must equal the tiles computed alone.
TEST(Bf16PairProducts, ConcurrentRowsMatchSequentialTiles) {
  constexpr std::size_t kDim = 128, kKeys = 512, kRows = 64;
  constexpr std::size_t kTile = geometry::LoadedUnits::kTile, kTileFloats = kTile * kTile;
  const auto products = make_bf16_pair_products(kDim);
  std::mt19937_64 rng(5);
  std::normal_distribution<float> gauss(0.0f, 1.0f);
  std::vector<std::vector<float>> units(kRows, std::vector<float>(kKeys * kDim));
  for (auto& row : units) {
    for (float& v : row) v = gauss(rng);
  }
  const auto tiles_of = [&](std::size_t r, float* out) {  // out: [2, kTile, kTile], tiles (0,0) and (0,1)
    const auto loaded = products->load(units[r], kKeys, kDim);
    loaded->tile(0, 0, out);
    loaded->tile(0, kTile, out + kTileFloats);
  };
  std::vector<float> alone(kRows * 2 * kTileFloats), together(kRows * 2 * kTileFloats);
  for (std::size_t r = 0; r < kRows; ++r) tiles_of(r, alone.data() + r * 2 * kTileFloats);
#pragma omp parallel for num_threads(8) schedule(dynamic, 1)
  for (std::size_t r = 0; r < kRows; ++r) tiles_of(r, together.data() + r * 2 * kTileFloats);
  for (std::size_t r = 0; r < kRows; ++r) {
    // Diagonal tiles are defined on and above the diagonal only (pair_products.h).
    for (std::size_t i = 0; i < kTile; ++i) {
      for (std::size_t j = 0; j < kTile; ++j) {
        const std::size_t diag = (r * 2) * kTileFloats + i * kTile + j, off = diag + kTileFloats;
        if (j >= i) {
          ASSERT_EQ(together[diag], alone[diag]) << "row " << r << " (" << i << "," << j << ")";
        }
        ASSERT_EQ(together[off], alone[off]) << "row " << r << " (" << i << "," << kTile + j << ")";
      }
    }
  }
}

}  // namespace
}  // namespace attngeom
