// Element-wise ops (norms, RoPE, activations, softmax) against their definitions in double.
#include "ops/elementwise.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "random_values.h"

namespace attngeom {
namespace {

using testing::random_vector;

constexpr double kEps = std::numeric_limits<float>::epsilon();

TEST(Elementwise, RmsNormMatchesDefinitionWithGemmaOffset) {
  std::mt19937 rng(3);
  const int rows = 4, dim = 96;
  const auto x = random_vector(static_cast<std::size_t>(rows) * dim, rng, 3.0f);
  const auto w = random_vector(static_cast<std::size_t>(dim), rng);
  for (const float offset : {0.0f, 1.0f}) {
    std::vector<float> y(x.size());
    rms_norm(x.data(), rows, dim, w.data(), offset, 1e-5f, y.data());
    for (int r = 0; r < rows; ++r) {
      double ms = 0;
      for (int i = 0; i < dim; ++i) ms += static_cast<double>(x[r * dim + i]) * x[r * dim + i] / dim;
      for (int i = 0; i < dim; ++i) {
        const double exact = x[r * dim + i] / std::sqrt(ms + 1e-5) * (offset + w[i]);
        EXPECT_NEAR(y[r * dim + i], exact, 8 * kEps * std::abs(exact) + 1e-30);
      }
    }
  }
}

// apply_rope over the first `rotary` of each head of width d against the formula; the rest
// of the head must pass through untouched.
void check_rope(int seq, int heads, int d, int rotary, double theta, unsigned seed) {
  std::vector<double> inv_freq(static_cast<std::size_t>(rotary / 2));
  for (int i = 0; i < rotary / 2; ++i) inv_freq[static_cast<std::size_t>(i)] = 1.0 / std::pow(theta, 2.0 * i / rotary);
  std::vector<float> table(static_cast<std::size_t>(seq) * rotary);  // [seq, cos | sin]
  make_rope_table(seq, inv_freq, 1.0, table.data());
  std::mt19937 rng(seed);
  auto x = random_vector(static_cast<std::size_t>(seq) * heads * d, rng);
  const auto original = x;
  apply_rope(x.data(), seq, heads, d, rotary, table.data());
  for (int p = 0; p < seq; ++p) {
    for (int h = 0; h < heads; ++h) {
      const std::size_t at = static_cast<std::size_t>(p * heads + h) * d;
      for (int i = 0; i < rotary / 2; ++i) {
        const double angle = p / std::pow(theta, 2.0 * i / rotary);
        const double x1 = original[at + i], x2 = original[at + i + rotary / 2];
        // Tables are rounded once to fp32; the rotation adds two products and a sum.
        const double tol = 4 * kEps * (std::abs(x1) + std::abs(x2));
        EXPECT_NEAR(x[at + i], x1 * std::cos(angle) - x2 * std::sin(angle), tol);
        EXPECT_NEAR(x[at + i + rotary / 2], x2 * std::cos(angle) + x1 * std::sin(angle), tol);
      }
      for (int i = rotary; i < d; ++i) EXPECT_EQ(x[at + i], original[at + i]);
    }
  }
}

TEST(Elementwise, RopeRotatesHalvesByPositionAngles) { check_rope(50, 3, 8, 8, 500.0, 4); }

// GPT-NeoX: rotary_dim = head_dim * rotary_pct.
TEST(Elementwise, PartialRopeRotatesTheFirstRotaryDimsAndPassesTheRest) { check_rope(20, 2, 12, 4, 100.0, 5); }

TEST(Elementwise, LayerNormMatchesDefinitionWithBias) {
  const std::int64_t rows = 5, dim = 33;
  std::mt19937 rng(6);
  auto x = random_vector(static_cast<std::size_t>(rows * dim), rng);
  for (float& v : x) v = 3.0f + 2.0f * v;  // a mean far from 0: the centring matters
  const auto w = random_vector(static_cast<std::size_t>(dim), rng);
  const auto b = random_vector(static_cast<std::size_t>(dim), rng);
  std::vector<float> out(x.size());
  const float eps = 1e-5f;
  layer_norm(x.data(), rows, dim, w.data(), b.data(), eps, out.data());
  for (std::int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (std::int64_t i = 0; i < dim; ++i) mean += x[static_cast<std::size_t>(r * dim + i)];
    mean /= static_cast<double>(dim);
    for (std::int64_t i = 0; i < dim; ++i) {
      const double c = x[static_cast<std::size_t>(r * dim + i)] - mean;
      var += c * c;
    }
    var /= static_cast<double>(dim);
    for (std::int64_t i = 0; i < dim; ++i) {
      const auto k = static_cast<std::size_t>(i);
      const double want = (x[static_cast<std::size_t>(r * dim + i)] - mean) / std::sqrt(var + eps) * w[k] + b[k];
      EXPECT_NEAR(out[static_cast<std::size_t>(r * dim + i)], want, 8 * kEps * (std::abs(want) + std::abs(b[k]) + 1));
    }
  }
}

TEST(Elementwise, PlainActivationIsTheGatedOneTimesOne) {
  std::mt19937 rng(7);
  auto x = random_vector(257, rng);
  for (float& v : x) v *= 6.0f;
  const std::vector<float> ones(x.size(), 1.0f);
  for (const Activation act : {Activation::kSilu, Activation::kGeluTanh, Activation::kGeluErf, Activation::kRelu}) {
    std::vector<float> plain(x.size()), gated(x.size());
    activation(act, x.data(), plain.data(), static_cast<std::int64_t>(x.size()));
    gated_activation(act, x.data(), ones.data(), gated.data(), static_cast<std::int64_t>(x.size()));
    for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(plain[i], gated[i], 4 * kEps * (std::abs(gated[i]) + 1e-3));
  }
}

// libmvec's expf/tanhf/erff err by a few ulp (budget: 8). For SiLU that is a relative
// error; GELU's 1 + tanh (or erf) cancels for negative inputs, so there the function's
// error is absolute, 8 eps * 0.5 |g u|. Inputs span saturation and expf overflow.
TEST(Elementwise, GatedActivationsMatchFormulas) {
  std::vector<float> g = {-100.0f, -30.0f, -3.0f, -0.5f, 0.0f, 0.7f, 2.5f, 30.0f, 100.0f};
  std::vector<float> u(g.size());
  for (std::size_t i = 0; i < g.size(); ++i) u[i] = i % 2 ? -1.5f : 0.75f;
  std::mt19937 rng(9);
  for (const float x : random_vector(4099, rng, 3.0f)) {  // past every vector-width remainder
    g.push_back(x);
    u.push_back(1.0f);
  }
  for (const Activation act : {Activation::kSilu, Activation::kGeluTanh, Activation::kGeluErf, Activation::kRelu}) {
    std::vector<float> out(g.size());
    gated_activation(act, g.data(), u.data(), out.data(), static_cast<std::int64_t>(g.size()));
    auto in_place = g;  // out may be gate
    gated_activation(act, in_place.data(), u.data(), in_place.data(), static_cast<std::int64_t>(g.size()));
    EXPECT_EQ(in_place, out);
    for (std::size_t i = 0; i < g.size(); ++i) {
      const double x = g[i];
      double a = 0;
      if (act == Activation::kSilu) a = x / (1 + std::exp(-x));
      if (act == Activation::kGeluTanh) a = 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
      if (act == Activation::kGeluErf) a = 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
      if (act == Activation::kRelu) a = x > 0 ? x : 0;
      const double function_error =
          act == Activation::kSilu || act == Activation::kRelu ? 0.0 : 8 * kEps * 0.5 * std::abs(x * u[i]);
      EXPECT_NEAR(out[i], a * u[i], 16 * kEps * std::abs(a * u[i]) + function_error + 1e-30) << "g = " << x;
    }
  }
}

// The vectorised softmax (libmvec expf, at most 4 ulp) against exp and a sum in double.
// Each probability carries the expf error, one rounding of x - max, the normalising
// product and the sum's rounding: well inside 8 ulp for scores of magnitude < 32.
TEST(Elementwise, SoftmaxRowMatchesDoublePrecisionDefinition) {
  std::mt19937 rng(11);
  for (const std::int64_t n : {1, 7, 16, 17, 1000, 4099}) {
    std::vector<float> row = random_vector(static_cast<std::size_t>(n), rng, 4.0f);
    const std::vector<float> scores = row;
    softmax_row(row.data(), n);
    double max_score = scores[0];
    for (const float s : scores) max_score = std::max<double>(max_score, s);
    double sum = 0;
    for (const float s : scores) sum += std::exp(s - max_score);
    for (std::int64_t i = 0; i < n; ++i) {
      const double p = std::exp(scores[static_cast<std::size_t>(i)] - max_score) / sum;
      const double x_rounding = std::abs(scores[static_cast<std::size_t>(i)] - max_score) * kEps;
      EXPECT_NEAR(row[static_cast<std::size_t>(i)], p, p * (8 * kEps + x_rounding)) << "n=" << n << " i=" << i;
    }
  }
}

TEST(Elementwise, ClampSymmetricClampsBothSidesAndKeepsNan) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> x{-9.0f, -2.0f, -1.5f, 0.0f, 1.5f, 2.0f, 7.0f, nan};
  clamp_symmetric(x.data(), static_cast<std::int64_t>(x.size()), 2.0f);
  const std::vector<float> want{-2.0f, -2.0f, -1.5f, 0.0f, 1.5f, 2.0f, 2.0f};
  EXPECT_EQ(std::vector<float>(x.begin(), x.begin() + 7), want);
  EXPECT_TRUE(std::isnan(x[7]));
}

TEST(Elementwise, ScaleInPlaceIsOneRoundedProduct) {
  std::mt19937 rng(12);
  std::vector<float> x = random_vector(1000, rng, 3.0f);
  const std::vector<float> before = x;
  scale_in_place(x.data(), static_cast<std::int64_t>(x.size()), 0.22f);
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(x[i], static_cast<float>(static_cast<double>(before[i]) * 0.22f)) << i;
  }
}

}  // namespace
}  // namespace attngeom
