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
      EXPECT_NEAR(screened.mean_abs, reference.mean_abs, bound);
      EXPECT_NEAR(screened.sigma2, reference.sigma2, kDim * bound * (2.0 * reference.max_abs + bound));
    }
  }
}

}  // namespace
}  // namespace attngeom
