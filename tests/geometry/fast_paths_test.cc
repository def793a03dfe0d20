// The fast paths of analyze_row against their direct definitions: the tile-screened cosine
// deviations and their O(M d^2) second moment against the double Gram, the blocked lag band
// against cosines taken pair by pair, the recursive model sweep of the reconstructed bounds
// against mu_k and T_k summed pair by pair, and R1 and R2 on one shared sweep against each
// computed alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "geometry/bound_model.h"
#include "geometry/cosine_model.h"
#include "geometry/deviation_sums.h"
#include "geometry/reconstructed_bounds.h"
#include "geometry/selection_metrics.h"
#include "geometry/value_diagnostics.h"
#include "random_rows.h"
#include "same_geometry.h"
#include "util/float_error.h"

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

// Bound on |deviation_square_sum - the sum of delta^2 over pairs in double| for this row
// (deviation_sums.h): the float block Grams, the units' rounding to float (2u + u^2 on each
// cosine), and the cancellation of the three double sums.
double square_sum_tolerance(const UnitRows& units, double max_abs, std::size_t pairs) {
  const std::size_t keys = units.keys();
  double absolute_products = 0.0;  // sum_{i,l} <|u_i|, |u_l|>^2
  for (std::size_t i = 0; i < keys; ++i) {
    for (std::size_t l = 0; l < keys; ++l) {
      double dot = 0.0;
      for (std::size_t t = 0; t < units.dim; ++t) dot += std::abs(units.rounded_unit(i)[t] * units.rounded_unit(l)[t]);
      absolute_products += dot * dot;
    }
  }
  const double gamma = summation_error_factor(kGramBlock, 0x1p-24);
  const double rounding = 0x1p-23 + 0x1p-48;
  const auto count = static_cast<double>(pairs);
  return (2.0 * gamma + gamma * gamma) / 2.0 * absolute_products + count * (2.0 * max_abs + rounding) * rounding +
         1e-13 * (count + absolute_products);
}

// The screen's maximum is exact and its sigma2 is deviation_square_sum, both against the
// pairs of the double Gram.
TEST(ScreenedDeviation, MatchesTheDoubleGramWithAnExactMaximum) {
  for (const testing::OwnedRow& row : rows()) {
    const RowGram gram = row_gram(row.view());
    const UnitRows units = unit_rows(row.view());
    for (const CosineModel& model : kModels) {
      const CosineDeviation reference = cosine_deviation(row.view(), gram, model);
      const CosineDeviation screened = screened_cosine_deviation(units, model, fp32_pair_products());
      const std::string where = "M=" + std::to_string(row.alpha.size()) + " beta=" + std::to_string(model.beta) +
                                " rho_0=" + std::to_string(model.rho_0);
      EXPECT_EQ(screened.pairs, reference.pairs) << where;
      // The maximum is recomputed in double: only the last bits of the cosine may differ.
      EXPECT_NEAR(screened.max_abs, reference.max_abs, 1e-14) << where;
      const double tolerance = square_sum_tolerance(units, reference.max_abs, reference.pairs);
      const double pair_by_pair =
          reference.sigma2 * static_cast<double>(reference.pairs) / static_cast<double>(row.dim);
      EXPECT_NEAR(deviation_square_sum(units, model), pair_by_pair, tolerance) << where;
      if (reference.pairs == 0) continue;
      const double per_pair = static_cast<double>(row.dim) / static_cast<double>(reference.pairs);
      EXPECT_NEAR(screened.sigma2, reference.sigma2, per_pair * tolerance) << where;
    }
  }
}

// C(tau) and the negative pair share straight from the definition: each cosine from the float
// vectors in double, each pair with two non-zero vectors.
struct NaiveLagCurve {
  std::vector<double> mean_cosine;
  std::size_t pairs = 0;
  std::size_t negative_pairs = 0;
  std::size_t near_zero_pairs = 0;  // |cos| below the band's rounding: its sign may differ
};

// The band's cosines are float products of the units rounded to float: the fp32 pair
// products' bound.
double band_cosine_error(std::size_t dim) { return fp32_product_error_bound(dim); }

NaiveLagCurve naive_lag_curve(const testing::OwnedRow& row, std::size_t max_lag) {
  const std::size_t keys = row.alpha.size();
  const auto vector = [&](std::size_t k) { return row.values.data() + k * row.dim; };
  const auto dot = [&](std::size_t i, std::size_t l) {
    double sum = 0.0;
    for (std::size_t t = 0; t < row.dim; ++t) sum += static_cast<double>(vector(i)[t]) * vector(l)[t];
    return sum;
  };
  NaiveLagCurve out;
  for (std::size_t tau = 1; tau <= max_lag; ++tau) {
    double sum = 0.0;
    std::size_t pairs = 0;
    for (std::size_t i = 1; i + tau < keys; ++i) {
      const double norms = std::sqrt(dot(i, i)) * std::sqrt(dot(i + tau, i + tau));
      if (norms == 0.0) continue;
      const double cosine = dot(i, i + tau) / norms;
      sum += cosine;
      ++pairs;
      out.negative_pairs += cosine < 0.0;
      out.near_zero_pairs += std::abs(cosine) <= band_cosine_error(row.dim);
    }
    out.mean_cosine.push_back(pairs > 0 ? sum / static_cast<double>(pairs) : 0.0);
    out.pairs += pairs;
  }
  return out;
}

// Rows shorter than, near and past the band's 16-key blocks, lags across several 16-lag groups, zero
// vectors, and alternating directions (every odd lag negative). Dimensions below, at and past the
// 16 x 16 squares the units are transposed in.
TEST(LagBand, MatchesCosinesTakenPairByPair) {
  std::mt19937_64 rng(11);
  std::vector<testing::OwnedRow> cases;
  for (const std::size_t keys : {6, 9, 33, 300, 1030}) {
    for (const std::size_t dim : {5, 24, 128}) cases.push_back(testing::random_row(rng, keys, dim, {0.0, 0.0, 0.1}));
  }
  testing::OwnedRow alternating = testing::random_row(rng, 200, 16, {});
  for (std::size_t k = 1; k < 200; ++k) {
    for (std::size_t t = 0; t < 16; ++t)
      alternating.values[k * 16 + t] = alternating.values[16 + t] * (k % 2 ? 1.0f : -1.0f);
  }
  cases.push_back(alternating);
  for (const testing::OwnedRow& row : cases) {
    const std::size_t length = row.alpha.size() - 1;
    const UnitRows units = unit_rows(row.view());
    for (const std::size_t max_lag :
         {std::size_t{1}, std::size_t{7}, default_max_lag(row.alpha.size()), std::size_t{90}, length - 1}) {
      if (max_lag == 0 || max_lag >= length) continue;
      const std::string where = "M=" + std::to_string(row.alpha.size()) + " d=" + std::to_string(row.dim) +
                                " tau_max=" + std::to_string(max_lag);
      LagCurveOptions options;
      options.max_lag = max_lag;
      const LagCurve fast = lag_curve(units, options);
      const NaiveLagCurve naive = naive_lag_curve(row, max_lag);
      ASSERT_EQ(fast.mean_cosine.size(), max_lag) << where;
      // Each mean is within the float cosines' bound, plus the double units' own rounding.
      for (std::size_t tau = 0; tau < max_lag; ++tau) {
        EXPECT_NEAR(fast.mean_cosine[tau], naive.mean_cosine[tau], band_cosine_error(row.dim) + 1e-13)
            << where << " tau=" << tau + 1;
      }
      const double pairs = static_cast<double>(naive.pairs);
      const double negative_share = static_cast<double>(naive.negative_pairs) / pairs;
      EXPECT_NEAR(fast.negative_pair_share, negative_share, (static_cast<double>(naive.near_zero_pairs) + 1e-9) / pairs)
          << where;
    }
  }
}

// R2's separation statements from their definition (reconstructed_bounds.h), every tail
// min(1, n (n - 1) exp(-d m^2 / (2 sigma^2 T^2))) with its exp, at the threshold t where the
// tails of the farthest selected and the nearest unselected key balance.
SeparationBound naive_separation(const ModelSweep& sweep, std::size_t n, const ProbabilisticEnvelopeOptions& o) {
  const std::span<const double> mu = sweep.mu(), spread = sweep.spread();
  const std::span<const std::size_t> support = sweep.support();
  const auto fixed = [&](std::size_t p) { return support[p] < 2 || spread[p] == 0.0; };
  std::size_t in = 0, out = n;
  for (std::size_t p = 0; p < n; ++p) in = mu[p] > mu[in] ? p : in;
  for (std::size_t p = n; p < mu.size(); ++p) out = mu[p] < mu[out] ? p : out;
  const double t = fixed(in)    ? mu[in] * (1.0 + 1e-9)
                   : fixed(out) ? mu[out] * (1.0 - 1e-9)
                                : (mu[in] * spread[out] + mu[out] * spread[in]) / (spread[in] + spread[out]);
  const auto tail = [&](std::size_t p, double margin) {
    const double pairs = static_cast<double>(support[p]) * static_cast<double>(support[p] - 1);
    const double exponent = static_cast<double>(o.dim) * margin * margin / (2.0 * o.sigma2 * spread[p] * spread[p]);
    return std::min(1.0, pairs * std::exp(-exponent));
  };
  SeparationBound b;
  b.model_margin = std::sqrt(mu[out]) - std::sqrt(mu[in]);
  double missed = 0.0;
  for (std::size_t p = 0; p < n; ++p)
    missed += fixed(p) ? (mu[p] > t ? 1.0 : 0.0) : t > mu[p] ? tail(p, t - mu[p]) : 1.0;
  for (std::size_t p = n; p < mu.size(); ++p) {
    b.expected_false_positives += fixed(p) ? (mu[p] <= t ? 1.0 : 0.0) : mu[p] > t ? tail(p, mu[p] - t) : 1.0;
  }
  b.expected_recall = 1.0 - missed / static_cast<double>(n);
  b.separation_probability = b.model_margin > 0.0 ? std::max(0.0, 1.0 - missed - b.expected_false_positives) : 0.0;
  return b;
}

// analyze_row's single sweep for R1 and R2: R1 as deterministic_envelope gives it alone; R2's
// points from each key's margin T_k sqrt(2 sigma^2 log(n_k (n_k - 1) M / delta) / d) taken
// key by key (the envelope caches the root by support); its separation statements from their
// definition (the envelope skips the exp of tails that are surely 1), and as
// probabilistic_envelope gives them alone.
TEST(ReconstructedEnvelopes, SharedSweepMatchesTheDefinitions) {
  std::mt19937_64 rng(13);
  for (const CosineModel& model : kModels) {
    const testing::OwnedRow row = testing::random_row(rng, 300, 16, {0.2, 0.1, 0.05});
    const UnitRows units = unit_rows(row.view());
    const BoundInputs inputs{row.alpha, units.norms, model};
    const std::vector<std::size_t> n_values = default_n_grid(row.alpha.size());
    const ProbabilisticEnvelopeOptions r2_options{row.dim, 0.7, 0.05};
    const ReconstructedEnvelopes both = reconstructed_envelopes(inputs, n_values, 0.3, r2_options);
    const std::vector<EnvelopePoint> r1 = deterministic_envelope(inputs, n_values, 0.3);
    const ProbabilisticEnvelope r2 = probabilistic_envelope(inputs, n_values, r2_options);
    ASSERT_EQ(both.r1.size(), n_values.size());
    ASSERT_EQ(both.r2.points.size(), n_values.size());
    ASSERT_EQ(both.r2.separation.size(), n_values.size());
    ModelSweep sweep(inputs);
    const std::size_t keys = row.alpha.size();
    std::vector<double> lo(keys), hi(keys);
    for (std::size_t g = 0; g < n_values.size(); ++g) {
      const std::size_t n = n_values[g];
      sweep.advance_to(n);
      for (std::size_t p = 0; p < keys; ++p) {
        const double spread = sweep.spread()[p];
        const auto support = static_cast<double>(sweep.support()[p]);
        const double margin =
            sweep.support()[p] < 2 || spread == 0.0
                ? 0.0
                : spread *
                      std::sqrt(2.0 * r2_options.sigma2 *
                                std::log(support * (support - 1.0) / (r2_options.delta / static_cast<double>(keys))) /
                                static_cast<double>(r2_options.dim));
        lo[p] = std::max(0.0, sweep.mu()[p] - margin - sweep.rounding()[p]);
        hi[p] = sweep.mu()[p] + margin + sweep.rounding()[p];
      }
      EXPECT_TRUE(testing::same_envelope_point(both.r1[g], r1[g])) << "R1 n=" << n;
      EXPECT_TRUE(testing::same_envelope_point(both.r2.points[g], envelope_from_intervals(n, lo, hi))) << "R2 n=" << n;
      EXPECT_TRUE(testing::same_envelope_point(r2.points[g], both.r2.points[g])) << "R2 alone n=" << n;
      const SeparationBound& a = both.r2.separation[g];
      const SeparationBound& b = r2.separation[g];
      EXPECT_EQ(a.model_margin, b.model_margin);
      EXPECT_EQ(a.threshold_radius, b.threshold_radius);
      EXPECT_EQ(a.separation_probability, b.separation_probability);
      EXPECT_EQ(a.expected_recall, b.expected_recall);
      EXPECT_EQ(a.expected_false_positives, b.expected_false_positives);
      const SeparationBound naive = naive_separation(sweep, n, r2_options);
      EXPECT_DOUBLE_EQ(a.model_margin, naive.model_margin) << "n=" << n;
      EXPECT_DOUBLE_EQ(a.separation_probability, naive.separation_probability) << "n=" << n;
      EXPECT_DOUBLE_EQ(a.expected_recall, naive.expected_recall) << "n=" << n;
      EXPECT_DOUBLE_EQ(a.expected_false_positives, naive.expected_false_positives) << "n=" << n;
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

// R1 with eta = 0 where the model is exact: every value equal, uniform weights, so every
// cosine is 1 (beta = 0, rho_0 = 1) and the distances tie exactly. The measured P, R, F must
// lie inside the envelope at every N; rounding of mu against the measured D^2 once put ties
// on the wrong side of the radius (R1 said R in [0.6, 0.6] where R = 1).
TEST(ReconstructedEnvelopes, R1HoldsOnExactTiesWithZeroEta) {
  for (const std::size_t keys : {40u, 100u}) {
    testing::OwnedRow row;
    row.dim = 8;
    row.alpha.assign(keys, 1.0f / static_cast<float>(keys));
    row.values.assign(keys * row.dim, 0.0f);
    for (std::size_t k = 0; k < keys; ++k) row.values[k * row.dim] = 0.3f, row.values[k * row.dim + 1] = 0.2f;
    const UnitRows units = unit_rows(row.view());
    const BoundInputs inputs{row.alpha, units.norms, CosineModel{0.0, 1.0}};
    const std::vector<std::size_t> n_values = every_n(keys);
    const std::vector<EnvelopePoint> r1 = deterministic_envelope(inputs, n_values, 0.0);
    const std::vector<SelectionMetrics> measured = selection_metrics(row.view(), n_values);
    for (std::size_t g = 0; g < n_values.size(); ++g) {
      const SelectionMetrics& m = measured[g];
      for (const auto& [value, interval, what] : {std::tuple{m.precision, r1[g].precision, "P"},
                                                  {m.recall, r1[g].recall, "R"},
                                                  {m.f_score, r1[g].f_score, "F"}}) {
        EXPECT_LE(interval.lower, value) << what << " at M = " << keys << ", N = " << m.n;
        EXPECT_GE(interval.upper, value) << what << " at M = " << keys << ", N = " << m.n;
      }
    }
  }
}

// At N = 1 the selected point is s_1 itself: D^2 = 0 exactly, so R1's interval for it is
// [0, 0] whatever eta is, and R(1) = 1 is certain. A rounding allowance on it once let any
// unselected key whose interval reached 0 pull the recall's lower end to 0.
TEST(ReconstructedEnvelopes, R1RecallIsCertainAtNEqualsOne) {
  std::mt19937_64 rng(7);
  const testing::OwnedRow row = testing::random_row(rng, 64, 16, {});
  const UnitRows units = unit_rows(row.view());
  const BoundInputs inputs{row.alpha, units.norms, CosineModel{0.5, 0.2}};
  const std::vector<std::size_t> one = {1};
  for (const double eta : {0.0, 0.5, 2.0}) {
    const EnvelopePoint r1 = deterministic_envelope(inputs, one, eta).front();
    EXPECT_EQ(r1.recall.lower, 1.0) << "eta = " << eta;
    EXPECT_EQ(r1.recall.upper, 1.0) << "eta = " << eta;
  }
}

}  // namespace
}  // namespace attngeom::geometry
