// bf16 attention products (ops/attention_bf16.h) against a double-precision reference on the
// same bf16-rounded q, k, v. What is left to bound is fp32 accumulation, the fp32 softmax
// and the rounding of the probabilities to bf16, each from its unit roundoff:
// - scores: |ds| <= scale * gamma_d * sum_t |q_t k_t| + 2 eps32 |s| (the scale, the result);
// - probabilities: a softmax whose inputs move by at most D moves each p by at most
//   p (e^{2D} - 1), plus the fp32 softmax's own error (8 eps32 + |s - max| eps32) p;
// - outputs: sum_j |dp_j| |v_j| + (u_bf16 + gamma_keys) (1 + u_bf16) sum_j p_j |v_j|.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <tuple>
#include <vector>

#include "ops/attention.h"
#include "util/half.h"

namespace attngeom {
namespace {

constexpr double kEps32 = 0x1p-24;  // fp32 unit roundoff
constexpr double kU16 = 0x1p-8;     // bf16 unit roundoff (8 significant bits)

double gamma(std::size_t n, double u) { return static_cast<double>(n) * u / (1.0 - static_cast<double>(n) * u); }

std::vector<float> rounded_normal(std::size_t n, std::mt19937& rng, float scale) {
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = bf16_to_f32(f32_to_bf16(dist(rng)));  // already bf16: rounding them again is exact
  return v;
}

// Row i of head h in double, with each probability's and output's error bound.
struct ReferenceRow {
  std::vector<double> p, p_bound;      // [seq]
  std::vector<double> out, out_bound;  // [d]
};

ReferenceRow reference_row(const AttentionShape& s, const std::vector<float>& q, const std::vector<float>& k,
                           const std::vector<float>& v, int h, int i) {
  const int d = s.head_dim, g = h / (s.heads / s.kv_heads), first = first_visible_key(s, i);
  const auto q_at = [&](int t, int c) {
    return static_cast<double>(q[(static_cast<std::size_t>(t) * s.heads + h) * d + c]);
  };
  const auto kv_at = [&](const std::vector<float>& x, int t, int c) {
    return static_cast<double>(x[(static_cast<std::size_t>(t) * s.kv_heads + g) * d + c]);
  };
  std::vector<double> score(static_cast<std::size_t>(i + 1), 0.0);
  double top = -INFINITY, drift = 0.0;  // drift: the largest score error bound in the row
  for (int j = first; j <= i; ++j) {
    double dot = 0.0, magnitude = 0.0;
    for (int c = 0; c < d; ++c) {
      dot += q_at(i, c) * kv_at(k, j, c);
      magnitude += std::abs(q_at(i, c) * kv_at(k, j, c));
    }
    score[j] = s.scale * dot;
    top = std::max(top, score[j]);
    drift = std::max(drift, s.scale * gamma(d, kEps32) * magnitude + 2 * kEps32 * std::abs(score[j]));
  }
  double total = 0.0;
  for (int j = first; j <= i; ++j) total += std::exp(score[j] - top);
  ReferenceRow r{std::vector<double>(s.seq, 0.0), std::vector<double>(s.seq, 0.0), std::vector<double>(d, 0.0),
                 std::vector<double>(d, 0.0)};
  const double keys_gamma = gamma(static_cast<std::size_t>(i - first + 1), kEps32);
  for (int j = first; j <= i; ++j) {
    const double p = std::exp(score[j] - top) / total;
    r.p[j] = p;
    r.p_bound[j] = p * (std::expm1(2 * drift) + 8 * kEps32 + (top - score[j] + drift) * kEps32);
    for (int c = 0; c < d; ++c) {
      r.out[c] += p * kv_at(v, j, c);
      r.out_bound[c] += r.p_bound[j] * std::abs(kv_at(v, j, c)) +
                        (kU16 + keys_gamma) * (1 + kU16) * (p + r.p_bound[j]) * std::abs(kv_at(v, j, c));
    }
  }
  return r;
}

class Bf16AttentionTest : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(Bf16AttentionTest, MatchesReferenceOnRoundedInputsWithinDerivedBounds) {
  const auto [window, kv_heads] = GetParam();
  AttentionShape s{300, 4, kv_heads, 32, window, 1.0f / std::sqrt(32.0f)};  // two full query blocks and a part
  std::mt19937 rng(11);
  const auto q = rounded_normal(static_cast<std::size_t>(s.seq) * s.heads * s.head_dim, rng, 1.5f);
  const auto k = rounded_normal(static_cast<std::size_t>(s.seq) * s.kv_heads * s.head_dim, rng, 1.5f);
  const auto v = rounded_normal(static_cast<std::size_t>(s.seq) * s.kv_heads * s.head_dim, rng, 1.0f);
  const std::vector<int> rows = {0, 1, 127, 128, 200, 299};
  std::vector<float> captured(static_cast<std::size_t>(s.heads) * rows.size() * s.seq);
  std::vector<float> out(static_cast<std::size_t>(s.seq) * s.heads * s.head_dim);
  AttentionScratch scratch;
  // A shorter call first, so that the products are reused across a change of length.
  const AttentionShape shorter{150, s.heads, s.kv_heads, s.head_dim, s.window, s.scale};
  causal_attention(shorter, q.data(), k.data(), v.data(), out.data(), {}, {}, {}, scratch, {}, Precision::kBf16);
  causal_attention(
      s, q.data(), k.data(), v.data(), out.data(), rows,
      [&](const AttentionRows& block) {
        std::copy_n(block.probs, block.heads() * rows.size() * s.seq,
                    captured.data() + block.head_begin * rows.size() * s.seq);
      },
      {}, scratch, {}, Precision::kBf16);

  double worst_p = 0.0, worst_out = 0.0;  // largest |error| / bound seen
  for (int h = 0; h < s.heads; ++h) {
    for (std::size_t r = 0; r < rows.size(); ++r) {
      const ReferenceRow ref = reference_row(s, q, k, v, h, rows[r]);
      for (int j = 0; j < s.seq; ++j) {
        const float got = captured[(h * rows.size() + r) * s.seq + j];
        if (ref.p[j] == 0.0) {
          ASSERT_EQ(got, 0.0f) << "masked key must be zero: head " << h << " row " << rows[r] << " key " << j;
          continue;
        }
        ASSERT_LE(std::abs(got - ref.p[j]), ref.p_bound[j] + 1e-7)
            << "head " << h << " row " << rows[r] << " key " << j;
        worst_p = std::max(worst_p, std::abs(got - ref.p[j]) / (ref.p_bound[j] + 1e-7));
      }
      for (int c = 0; c < s.head_dim; ++c) {
        const float got = out[(static_cast<std::size_t>(rows[r]) * s.heads + h) * s.head_dim + c];
        ASSERT_LE(std::abs(got - ref.out[c]), ref.out_bound[c] + 1e-7)
            << "head " << h << " row " << rows[r] << " dim " << c;
        worst_out = std::max(worst_out, std::abs(got - ref.out[c]) / (ref.out_bound[c] + 1e-7));
      }
    }
  }
  std::printf("[bf16 attention] window %d kv_heads %d: largest error / bound: probabilities %.3f, outputs %.3f\n",
              window, kv_heads, worst_p, worst_out);
}

INSTANTIATE_TEST_SUITE_P(WindowsAndGqa, Bf16AttentionTest,
                         ::testing::Values(std::make_tuple(0, 4), std::make_tuple(0, 2), std::make_tuple(40, 1),
                                           std::make_tuple(200, 4)));

}  // namespace
}  // namespace attngeom
