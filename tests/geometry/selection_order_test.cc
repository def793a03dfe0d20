// selection_order against its definition: a stable sort of the keys by descending weight, so
// that equal weights (-0 and +0 among them) keep the lower key first; on rows of every size
// class, with ties, zeros, subnormals and negative weights.
#include "geometry/selection_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace attngeom::geometry {
namespace {

std::vector<std::size_t> by_definition(const std::vector<float>& alpha) {
  std::vector<std::size_t> order(alpha.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return alpha[a] > alpha[b]; });
  return order;
}

// Weights drawn from a few shapes at once: spread over decades, copies of earlier weights,
// exact zeros of either sign, subnormals, and (for rows that are not attention rows) negatives.
std::vector<float> awkward_weights(std::mt19937_64& rng, std::size_t keys) {
  std::uniform_int_distribution<int> kind(0, 7);
  std::normal_distribution<double> gauss(0.0, 1.0);
  std::vector<float> alpha(keys);
  for (std::size_t k = 0; k < keys; ++k) {
    switch (kind(rng)) {
      case 0:
        alpha[k] = 0.0f;
        break;
      case 1:
        alpha[k] = -0.0f;
        break;
      case 2:
        alpha[k] = 1e-40f * static_cast<float>(k % 7);
        break;
      case 3:
        alpha[k] = k > 0 ? alpha[std::uniform_int_distribution<std::size_t>(0, k - 1)(rng)] : 0.5f;
        break;
      case 4:
        alpha[k] = -static_cast<float>(std::exp(3.0 * gauss(rng)));
        break;
      default:
        alpha[k] = static_cast<float>(std::exp(3.0 * gauss(rng)));
    }
  }
  return alpha;
}

TEST(SelectionOrder, EqualsAStableSortByDescendingWeight) {
  std::mt19937_64 rng(59);
  for (const std::size_t keys : {0, 1, 2, 3, 17, 255, 256, 257, 4099, 70000}) {
    const std::vector<float> alpha = awkward_weights(rng, keys);
    const SelectionOrder got = selection_order(alpha);
    ASSERT_EQ(got.order, by_definition(alpha)) << "M = " << keys;
    for (std::size_t p = 0; p < keys; ++p) ASSERT_EQ(got.rank[got.order[p]], p) << "M = " << keys;
  }
}

TEST(SelectionOrder, RowsWhoseWeightsShareHighBytes) {
  // Weights that differ only in their low bytes (the passes over shared digits are skipped).
  std::vector<float> alpha(1000);
  for (std::size_t k = 0; k < alpha.size(); ++k) alpha[k] = 0.25f + static_cast<float>((k * 37) % 11) * 0x1p-24f;
  EXPECT_EQ(selection_order(alpha).order, by_definition(alpha));
  const std::vector<float> same(300, 0.125f);
  EXPECT_EQ(selection_order(same).order, by_definition(same));
}

}  // namespace
}  // namespace attngeom::geometry
