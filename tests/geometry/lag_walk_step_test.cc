// The GPU's lag walk (one walk per lag over a kv head's Gram, every row's terms taken as the
// walk passes its last key), run on the CPU, against each row's own pass over its pairs with
// the same cosines: max |delta| and the pairs equal, sum delta^2 within the expansion's bound;
// and against geometry's cosine_deviation (its own double Gram and cosines) within the
// cosines' error. Values with zero vectors, a repeat, a far sink, and a nearly common
// direction whose model fits it to 1e-6.
#include "geometry/lag_walk_step.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "geometry/cosine_model.h"
#include "geometry/selection_metrics.h"

namespace attngeom::geometry {
namespace {

constexpr double kUnit = std::numeric_limits<double>::epsilon() / 2;  // u = 2^-53

struct Head {
  int size = 0, dim = 0;
  std::vector<float> values;  // [size, dim]
  std::vector<double> gram;   // [size, size] upper triangle, column-major
  std::vector<double> norms;  // [size]
  UpperGram view() const { return {gram.data(), norms.data(), size, 0}; }
};

Head make_head(int size, int dim, double noise, std::uint64_t seed) {
  Head h{size, dim, std::vector<float>(static_cast<std::size_t>(size * dim)), {}, {}};
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> gauss(0.0, 1.0);
  std::vector<double> common(static_cast<std::size_t>(dim));
  for (double& c : common) c = gauss(rng);
  for (int k = 0; k < size; ++k) {
    for (int t = 0; t < dim; ++t) h.values[k * dim + t] = static_cast<float>(common[t] + noise * gauss(rng));
  }
  std::fill_n(h.values.begin() + 3 * dim, dim, 0.0f);                                      // a zero vector
  if (size > 8) std::copy_n(h.values.begin() + 2 * dim, dim, h.values.begin() + 8 * dim);  // a repeat
  if (noise > 0.5) {
    for (int t = 0; t < dim; ++t) h.values[t] = 5.0f + 0.01f * static_cast<float>(t);  // a far sink
  }
  h.gram.assign(static_cast<std::size_t>(size) * size, 0.0);
  for (int l = 0; l < size; ++l) {
    for (int i = 0; i <= l; ++i) {
      double dot = 0.0;  // products of floats are exact in double
      for (int t = 0; t < dim; ++t) dot += static_cast<double>(h.values[i * dim + t]) * h.values[l * dim + t];
      h.gram[static_cast<std::size_t>(l) * size + i] = dot;
    }
  }
  for (int k = 0; k < size; ++k) h.norms.push_back(std::sqrt(h.gram[static_cast<std::size_t>(k) * size + k]));
  return h;
}

// Every row's terms as the kernel arranges them: a walk per lag, each row's terms at every lag
// in the order of the lags.
std::vector<DeviationTerms> walked(const Head& h, const std::vector<int>& keys,
                                   const std::vector<CosineModel>& models) {
  std::vector<DeviationTerms> out(keys.size());
  for (int tau = 0; tau < h.size; ++tau) {
    LagWalk walk = start_lag_walk(tau);
    for (std::size_t r = 0; r < keys.size(); ++r) {
      walk_to(walk, h.view(), keys[r] - 1);
      add_terms(out[r], lag_terms(walk, lag_model_cosine(tau, models[r].beta, models[r].rho_0)));
    }
  }
  return out;
}

// The same walks over strips of `width` columns, as the kernel takes them where the Gram does
// not fit whole: each strip [first, end) holds the rows 0..end-1 of its columns (ld = end), the
// lower triangle NaN; a row's terms are taken in the strip of its last key.
std::vector<DeviationTerms> walked_in_strips(const Head& h, const std::vector<int>& keys,
                                             const std::vector<CosineModel>& models, int width) {
  std::vector<DeviationTerms> out(keys.size());
  std::vector<LagWalk> walks;
  for (int tau = 0; tau < h.size; ++tau) walks.push_back(start_lag_walk(tau));
  std::size_t row = 0;
  for (int first = 0; first < h.size; first += width) {
    const int end = std::min(first + width, h.size);
    std::vector<double> strip(static_cast<std::size_t>(end - first) * end, std::numeric_limits<double>::quiet_NaN());
    for (int l = first; l < end; ++l) {
      std::copy_n(h.gram.begin() + static_cast<std::ptrdiff_t>(l) * h.size, l + 1,
                  strip.begin() + static_cast<std::ptrdiff_t>(l - first) * end);
    }
    const UpperGram g{strip.data(), h.norms.data(), end, first};
    std::size_t rows_end = row;  // the rows whose last key lies in this strip
    while (rows_end < keys.size() && keys[rows_end] <= end) ++rows_end;
    for (LagWalk& walk : walks) {
      for (std::size_t r = row; r < rows_end; ++r) {
        walk_to(walk, g, keys[r] - 1);
        add_terms(out[r], lag_terms(walk, lag_model_cosine(walk.tau, models[r].beta, models[r].rho_0)));
      }
      walk_to(walk, g, end - 1);
    }
    row = rows_end;
  }
  return out;
}

struct OwnPass {
  DeviationTerms terms;
  double bound_terms = 0.0;  // sum over pairs of (|c - shift| + |model - shift|)^2
};

// The row's pairs one by one, with each lag's first cosine (the walk's shift) for the bound.
OwnPass own_pass(const Head& h, int keys, const CosineModel& model) {
  OwnPass out;
  const UpperGram g = h.view();
  std::vector<double> shift(static_cast<std::size_t>(h.size), std::numeric_limits<double>::quiet_NaN());
  for (int l = 1; l < keys; ++l) {
    for (int i = l - 1; i >= 0; --i) {  // lags in ascending order, so each lag's first pair comes first
      if (h.norms[i] == 0.0 || h.norms[l] == 0.0) continue;
      const int tau = i == 0 ? 0 : l - i;
      const double cosine = gram_cosine(g, i, l);
      const double c = lag_model_cosine(tau, model.beta, model.rho_0);
      if (std::isnan(shift[tau])) shift[tau] = cosine;
      const double delta = cosine - c;
      out.terms.max_abs = std::fmax(out.terms.max_abs, std::fabs(delta));
      out.terms.sum_sq += delta * delta;
      out.terms.pairs += 1.0;
      const double spread = std::fabs(cosine - shift[tau]) + std::fabs(c - shift[tau]);
      out.bound_terms += spread * spread;
    }
  }
  return out;
}

// The walk's shift is the first cosine of a lag in order of l; own_pass visits each l's pairs
// by ascending lag, so its first pair at a lag is also the smallest l.
void expect_walk_matches(const Head& h, const std::vector<int>& keys, const std::vector<CosineModel>& models) {
  const std::vector<DeviationTerms> got = walked(h, keys, models);
  for (std::size_t r = 0; r < keys.size(); ++r) {
    SCOPED_TRACE("keys " + std::to_string(keys[r]) + ", beta " + std::to_string(models[r].beta));
    const OwnPass want = own_pass(h, keys[r], models[r]);
    EXPECT_EQ(got[r].pairs, want.terms.pairs);
    EXPECT_EQ(got[r].max_abs, want.terms.max_abs);
    // Each lag's moments err by (n + 6) u of its bound terms; the sums over lags and pairs by
    // their count times u of the total.
    const double pairs = want.terms.pairs;
    EXPECT_NEAR(got[r].sum_sq, want.terms.sum_sq, 4.0 * (pairs + 8.0) * kUnit * (want.bound_terms + want.terms.sum_sq));

    // geometry's own double Gram: each cosine within (d + 4) u of the exact one, each delta of
    // the two within e, each square within 2 |delta| e + e^2.
    const std::vector<float> alpha(static_cast<std::size_t>(keys[r]), 1.0f / static_cast<float>(keys[r]));
    const HeadRowView row{alpha, std::span<const float>(h.values.data(), static_cast<std::size_t>(keys[r] * h.dim)),
                          static_cast<std::size_t>(h.dim)};
    const CosineDeviation cpu = cosine_deviation(row, row_gram(row), models[r]);
    const double e = 2.0 * (h.dim + 6) * kUnit;
    EXPECT_EQ(static_cast<std::size_t>(got[r].pairs), cpu.pairs);
    EXPECT_NEAR(got[r].max_abs, cpu.max_abs, e);
    if (cpu.pairs == 0) continue;
    const double sigma2 = h.dim * got[r].sum_sq / pairs;
    const double bound = h.dim * (2.0 * cpu.max_abs * e + e * e) + 2.0 * pairs * kUnit * cpu.sigma2 +
                         h.dim * 4.0 * (pairs + 8.0) * kUnit * (want.bound_terms + want.terms.sum_sq) / pairs;
    EXPECT_NEAR(sigma2, cpu.sigma2, bound);
  }
}

TEST(LagWalkStep, EveryRowMatchesItsOwnPass) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<CosineModel> kinds = {{0.3, 0.2}, {inf, 0.0}, {0.0, -0.5}, {0.05, 0.9}};
  const Head h = make_head(300, 16, 1.0, 5);
  const std::vector<int> keys = {1, 2, 3, 4, 9, 41, 41, 200, 300};
  std::vector<CosineModel> models;
  for (std::size_t r = 0; r < keys.size(); ++r) models.push_back(kinds[r % kinds.size()]);
  expect_walk_matches(h, keys, models);
}

// Cosines near 1 against a model of constant cosine 1: sum delta^2 is about 1e-12 of the sum of
// squared cosines, which an expansion about zero would lose to rounding.
TEST(LagWalkStep, AFittingModelKeepsItsSmallDeviations) {
  const Head h = make_head(120, 8, 1e-6, 7);
  const std::vector<int> keys = {60, 120};
  const std::vector<CosineModel> models = {{0.0, 1.0}, {0.0, 1.0}};
  expect_walk_matches(h, keys, models);
  const std::vector<DeviationTerms> got = walked(h, keys, models);
  EXPECT_GT(got[1].sum_sq, 0.0);
  EXPECT_LT(got[1].sum_sq, 1e-6 * got[1].pairs);
}

// A walk goes on from strip to strip: the strips' terms equal the whole Gram's bit for bit,
// with strips narrower than a lag, rows ending inside a strip and at its last column, and
// several rows in one strip.
TEST(LagWalkStep, StripsOfColumnsWalkAsTheWholeGram) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<CosineModel> kinds = {{0.3, 0.2}, {inf, 0.0}, {0.0, -0.5}, {0.05, 0.9}};
  const Head h = make_head(150, 16, 1.0, 11);
  const std::vector<int> keys = {1, 2, 16, 17, 40, 41, 41, 100, 149, 150};
  std::vector<CosineModel> models;
  for (std::size_t r = 0; r < keys.size(); ++r) models.push_back(kinds[r % kinds.size()]);
  const std::vector<DeviationTerms> whole = walked(h, keys, models);
  for (const int width : {1, 16, 41, 64, 150}) {
    SCOPED_TRACE("width " + std::to_string(width));
    const std::vector<DeviationTerms> strips = walked_in_strips(h, keys, models, width);
    for (std::size_t r = 0; r < keys.size(); ++r) {
      EXPECT_EQ(strips[r].max_abs, whole[r].max_abs);
      EXPECT_EQ(strips[r].sum_sq, whole[r].sum_sq);
      EXPECT_EQ(strips[r].pairs, whole[r].pairs);
    }
  }
}

}  // namespace
}  // namespace attngeom::geometry
