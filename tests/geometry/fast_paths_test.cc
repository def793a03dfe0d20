// The fast paths of analyze_row against their direct definitions: the tile-screened cosine
// deviations against the double Gram, and the recursive model sweep of the reconstructed
// bounds against mu_k and T_k summed pair by pair.
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "geometry/bound_model.h"
#include "geometry/cosine_model.h"
#include "geometry/value_diagnostics.h"
#include "random_rows.h"

namespace attngeom::geometry {
namespace {

const CosineModel kModels[] = {{0.1, 0.3}, {0.0, -0.2}, {std::numeric_limits<double>::infinity(), 0.0}, {2.0, 0.9}};

// Rows of M near 1, a tile, and past it, with zero vectors; and a row of nearly equal
// vectors, where many pairs sit near the maximum deviation.
std::vector<testing::OwnedRow> rows() {
  std::mt19937_64 rng(5);
  std::vector<testing::OwnedRow> out;
  for (const std::size_t keys : {2, 3, 255, 256, 257, 600}) {
    out.push_back(testing::random_row(rng, keys, 24, {0.0, 0.1, keys > 3 ? 0.05 : 0.0}));
  }
  testing::OwnedRow similar = testing::random_row(rng, 300, 16, {});
  std::normal_distribution<float> jitter(0.0f, 1e-3f);
  for (std::size_t k = 0; k < 300; ++k) {
    for (std::size_t t = 0; t < 16; ++t) similar.values[k * 16 + t] = 1.0f + jitter(rng);
  }
  out.push_back(similar);
  return out;
}

TEST(ScreenedDeviation, MatchesTheDoubleGramWithAnExactMaximum) {
  for (const testing::OwnedRow& row : rows()) {
    const RowGram gram = row_gram(row.view());
    const UnitRows units = unit_rows(row.view());
    for (const CosineModel& model : kModels) {
      const CosineDeviation reference = cosine_deviation(row.view(), gram, model);
      const CosineDeviation screened = screened_cosine_deviation(units, model, fp32_pair_products());
      const std::string where = "M=" + std::to_string(row.alpha.size()) + " beta=" + std::to_string(model.beta);
      EXPECT_EQ(screened.pairs, reference.pairs) << where;
      // The maximum is recomputed in double: only the last bits of the cosine may differ.
      EXPECT_NEAR(screened.max_abs, reference.max_abs, 1e-14) << where;
      // Sums over fp32 products: each delta within the screen's bound (a few 1e-6 at this d).
      const double bound = fp32_pair_products().error_bound(row.dim) + 0x1p-22;
      EXPECT_NEAR(screened.mean_abs, reference.mean_abs, bound) << where;
      EXPECT_NEAR(screened.sigma2, reference.sigma2,
                  static_cast<double>(row.dim) * bound * (2.0 * reference.max_abs + bound)) << where;
    }
  }
}

// mu_k = sum_il w_i w_l nu_i nu_l c_il and T_k = sum_{i != l} |w_i w_l| nu_i nu_l, with w = alpha on
// I_N except w_k = 0 for k in I_N and w_k = -alpha_k for k in J_N (reconstructed_bounds.h).
TEST(ModelSweep, MatchesPairwiseSumsAtEveryN) {
  std::mt19937_64 rng(9);
  for (const CosineModel& model : kModels) {
    const testing::OwnedRow row = testing::random_row(rng, 40, 8, {0.2, 0.1, 0.05});
    const UnitRows units = unit_rows(row.view());
    ModelSweep sweep({row.alpha, units.norms, model});
    const std::vector<std::size_t>& order = selection_order(row.alpha).order;
    for (std::size_t n = 1; n < row.alpha.size(); ++n) {
      sweep.advance_to(n);
      for (std::size_t p = 0; p < row.alpha.size(); ++p) {
        std::vector<double> w(row.alpha.size(), 0.0);  // by key
        for (std::size_t q = 0; q < n; ++q) w[order[q]] = row.alpha[order[q]];
        w[order[p]] = p < n ? 0.0 : -static_cast<double>(row.alpha[order[p]]);
        // The sweep expands D^2 = ||s_N||^2 + alpha (alpha nu^2 - 2 <x, s_N>): its rounding scales
        // with those terms even where mu itself is 0.
        double scale = 0.0;
        for (std::size_t q = 0; q < n; ++q) scale += row.alpha[order[q]] * units.norms[order[q]];
        scale = scale * scale + std::pow(row.alpha[order[p]] * units.norms[order[p]], 2);
        double mu = 0.0, spread = 0.0;
        for (std::size_t i = 0; i < w.size(); ++i) {
          for (std::size_t l = 0; l < w.size(); ++l) {
            const double term = w[i] * w[l] * units.norms[i] * units.norms[l];
            mu += term * model.cosine(i, l);
            if (i != l) spread += std::abs(term);
            scale += std::abs(term);
          }
        }
        const double tolerance = 1e-12 * scale;
        EXPECT_NEAR(sweep.mu()[p], std::max(0.0, mu), tolerance) << "n=" << n << " p=" << p << " beta=" << model.beta;
        EXPECT_NEAR(sweep.spread()[p], spread, tolerance) << "n=" << n << " p=" << p;
      }
    }
  }
}

}  // namespace
}  // namespace attngeom::geometry
