// analyze's deviation screens (int8 and bf16): every tile entry within the loaded units' error
// bound of the exact cosine, the maximum deviation exact whatever the screen picks, and tiles
// computed on many threads at once equal to tiles computed alone.
#include "analysis/screen_products.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "geometry/cosine_model.h"
#include "geometry/value_rows.h"
#include "util/error.h"

namespace attngeom {
namespace {

constexpr std::size_t kTile = geometry::LoadedUnits::kTile;

struct Kernel {
  const char* name;
  std::unique_ptr<geometry::PairProducts> (*make)(std::size_t dim);
  double bound_limit;          // what a useful screen needs: random directions' deviations spread over +-0.3
  double outlier_bound_limit;  // the same with one coordinate 30x the others
};

class ScreenProducts : public testing::TestWithParam<Kernel> {
 protected:
  std::unique_ptr<geometry::PairProducts> make(std::size_t dim) const { return GetParam().make(dim); }
};

struct Row {
  std::vector<float> alpha;   // [M]
  std::vector<float> values;  // [M, d]
  std::size_t dim = 0;
  geometry::HeadRowView view() const { return {alpha, values, dim}; }
};

// Gaussian vectors with one zero vector; with `outlier`, one coordinate 30x the others (as
// LLM value vectors have), which coarsens every vector's int8 grid; with `spread` > 0, every
// vector one shared direction plus that much noise, so that many pairs (at 0.2) or nearly all
// (at 1e-3) sit within the int8 bound of the maximum deviation; with `tiny`, every vector has
// coordinates below bf16's smallest normal once it is a unit vector, which bf16 kernels read as 0.
Row make_row(std::mt19937_64& rng, std::size_t keys, std::size_t dim, bool outlier, float spread, bool tiny = false) {
  std::normal_distribution<float> gauss(0.0f, 1.0f);
  Row row{std::vector<float>(keys, 1.0f / static_cast<float>(keys)), std::vector<float>(keys * dim), dim};
  std::vector<float> shared(dim);
  for (float& x : shared) x = gauss(rng);
  for (std::size_t k = 0; k < keys; ++k) {
    for (std::size_t t = 0; t < dim; ++t) {
      float& v = row.values[k * dim + t];
      v = spread > 0.0f ? shared[t] + spread * gauss(rng) : gauss(rng);
      if (outlier && t == 5) v *= 30.0f;
      if (tiny && t % 3 == 0) v *= 1e-39f;
    }
  }
  if (keys > 3) std::fill_n(row.values.begin() + 3 * static_cast<std::ptrdiff_t>(dim), dim, 0.0f);
  return row;
}

TEST_P(ScreenProducts, EveryTileEntryIsWithinTheBound) {
  constexpr std::size_t kDim = 128;
  const auto products = make(kDim);
  if (!products) GTEST_SKIP() << "no " << GetParam().name << " kernel on this CPU";
  std::mt19937_64 rng(3);
  for (const bool outlier : {false, true}) {
    const Row row = make_row(rng, 300, kDim, outlier, 0.0f, /*tiny=*/outlier);
    const geometry::UnitRows units = geometry::unit_rows(row.view());
    const auto loaded = products->load(units.rounded, units.keys(), kDim);
    const double bound = loaded->error_bound();
    EXPECT_LT(bound, outlier ? GetParam().outlier_bound_limit : GetParam().bound_limit);
    std::vector<float> tile(kTile * kTile);
    std::vector<double> u(kDim), v(kDim);
    double worst = 0.0;
    for (std::size_t i0 = 0; i0 < units.keys(); i0 += kTile) {
      for (std::size_t j0 = i0; j0 < units.keys(); j0 += kTile) {
        loaded->tile(i0, j0, tile.data());
        for (std::size_t a = 0; a < kTile && i0 + a < units.keys(); ++a) {
          units.unit(i0 + a, u.data());
          for (std::size_t b = j0 == i0 ? a + 1 : 0; b < kTile && j0 + b < units.keys(); ++b) {
            units.unit(j0 + b, v.data());
            double exact = 0.0;
            for (std::size_t t = 0; t < kDim; ++t) exact += u[t] * v[t];
            worst = std::max(worst, std::abs(tile[a * kTile + b] - exact));
          }
        }
      }
    }
    EXPECT_LE(worst, bound) << "outlier=" << outlier;
    EXPECT_GT(worst, 0.0);  // the kernel does round: the check above is not vacuous
  }
}

TEST_P(ScreenProducts, DeviationsEqualThoseOfTheFp32Screen) {
  constexpr std::size_t kDim = 64;
  const auto products = make(kDim);
  if (!products) GTEST_SKIP() << "no " << GetParam().name << " kernel on this CPU";
  std::mt19937_64 rng(7);
  for (const std::size_t keys : {2, 5, 256, 700}) {
    for (const float spread : {0.0f, 0.2f, 1e-3f}) {
      const Row row = make_row(rng, keys, kDim, keys == 700, spread);
      const geometry::UnitRows units = geometry::unit_rows(row.view());
      const geometry::RowGram gram = geometry::row_gram(row.view());
      // beta = 0 with rho_0 = 0.9 fits the shared direction: the deviations crowd, and the
      // crowded tiles go through fp32 products again.
      for (const geometry::CosineModel model : {geometry::CosineModel{0.2, 0.1}, geometry::CosineModel{0.0, 0.9}}) {
        const std::string where = "M=" + std::to_string(keys) + " spread=" + std::to_string(spread);
        const geometry::CosineDeviation reference = geometry::cosine_deviation(row.view(), gram, model);
        const geometry::CosineDeviation fp32 =
            geometry::screened_cosine_deviation(units, model, geometry::fp32_pair_products());
        const geometry::CosineDeviation screened = geometry::screened_cosine_deviation(units, model, *products);
        EXPECT_NEAR(screened.max_abs, reference.max_abs, 1e-14) << where;
        // Both recompute the same maximum pair in double; sigma2 never reads the products.
        EXPECT_EQ(screened.max_abs, fp32.max_abs) << where;
        EXPECT_EQ(screened.sigma2, fp32.sigma2) << where;
        EXPECT_EQ(screened.pairs, reference.pairs) << where;
      }
    }
  }
}

// analyze screens many rows at once on the attention workers through one kernel: every
// thread's tiles must equal the tiles computed alone.
TEST_P(ScreenProducts, ConcurrentRowsMatchSequentialTiles) {
  constexpr std::size_t kDim = 128, kKeys = 512, kRows = 64, kTileFloats = kTile * kTile;
  const auto products = make(kDim);
  if (!products) GTEST_SKIP() << "no " << GetParam().name << " kernel on this CPU";
  std::mt19937_64 rng(5);
  std::vector<geometry::UnitRows> units;
  std::vector<Row> rows;
  for (std::size_t r = 0; r < kRows; ++r) rows.push_back(make_row(rng, kKeys, kDim, r % 2 == 1, 0.0f));
  for (const Row& row : rows) units.push_back(geometry::unit_rows(row.view()));
  const auto tiles_of = [&](std::size_t r, float* out) {  // out: [2, kTile, kTile], tiles (0,0) and (0,1)
    const auto loaded = products->load(units[r].rounded, kKeys, kDim);
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

// The shared maxima of many rows (geometry/deviation_maxima.h) read tiles on many threads at
// once: each row's max_abs must equal its own screen's, run after run.
TEST_P(ScreenProducts, SharedMaximaOnManyThreadsEqualEachRowsOwnScreen) {
  constexpr std::size_t kDim = 64, kKeys = 4096;
  const auto products = make(kDim);
  if (!products) GTEST_SKIP() << "no " << GetParam().name << " kernel on this CPU";
  std::mt19937_64 rng(11);
  const Row row = make_row(rng, kKeys, kDim, true, 0.0f);
  std::vector<std::size_t> keys;  // [rows] every 512th length
  for (std::size_t m = 512; m <= kKeys; m += 512) keys.push_back(m);
  geometry::RowAnalysisOptions options;
  options.pair_products = products.get();
  const auto maxima_of = [&](geometry::DeviationMethod method, bool threads) {
    geometry::ValueRows rows(row.view(), keys, options, method);
    for (std::size_t p = 0; p < rows.band_parts(); ++p) rows.compute_band(p);
    rows.finish_band();
    std::vector<geometry::ValueGeometry> geometry;  // [rows]
    for (std::size_t r = 0; r < keys.size(); ++r) geometry.push_back(rows.row(r));
    const auto parts = static_cast<std::ptrdiff_t>(rows.deviation_parts());
#pragma omp parallel for num_threads(8) schedule(dynamic, 1) if (threads)
    for (std::ptrdiff_t p = 0; p < parts; ++p) rows.compute_deviations(static_cast<std::size_t>(p), geometry);
    if (parts > 0) rows.finish_deviations(geometry);
    std::vector<double> out;
    for (const geometry::ValueGeometry& v : geometry) out.push_back(v.deviation.max_abs);
    return out;
  };
  const std::vector<double> own = maxima_of(geometry::DeviationMethod::kPerRow, false);
  for (int run = 0; run < 3; ++run) {
    EXPECT_EQ(maxima_of(geometry::DeviationMethod::kSharedMaxima, true), own) << "run " << run;
  }
}

// int8's grid is per vector, so an outlying coordinate coarsens it; bf16 rounds each
// coordinate relative to itself, and its bound stays about 2^-8 either way.
INSTANTIATE_TEST_SUITE_P(Kernels, ScreenProducts,
                         testing::Values(Kernel{"int8", make_int8_pair_products, 0.03, 0.08},
                                         Kernel{"bf16", make_bf16_pair_products, 0.01, 0.01}),
                         [](const testing::TestParamInfo<Kernel>& info) { return std::string(info.param.name); });

TEST(ScreenProducts, WrongDimensionIsRefused) {
  for (const auto make : {make_int8_pair_products, make_bf16_pair_products}) {
    const auto products = make(64);
    if (!products) continue;
    const std::vector<float> units(4 * 32, 0.0f);
    EXPECT_THROW(products->load(units, 4, 32), InputError);
  }
}

}  // namespace
}  // namespace attngeom
