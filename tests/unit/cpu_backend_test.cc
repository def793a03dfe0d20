// The CPU backend's row operations and attention against naive scalar references in double.
#include "ops/cpu_backend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "ops/attention.h"
#include "random_values.h"
#include "util/half.h"

namespace attngeom {
namespace {

using testing::random_vector;

constexpr double kEps = std::numeric_limits<float>::epsilon();

// x[rows[i]] += weights[i] * y[i] against the double-precision sum; untouched rows stay bit-exact.
TEST(CpuBackend, ScatterAddRowsMatchesScalarReference) {
  std::mt19937 rng(21);
  const int x_rows = 9, y_rows = 4, cols = 37;
  const std::vector<float> x = random_vector(static_cast<std::size_t>(x_rows) * cols, rng);
  const std::vector<float> y = random_vector(static_cast<std::size_t>(y_rows) * cols, rng);
  const std::vector<int> rows = {7, 0, 3, 8};
  const std::vector<float> weights = {0.25f, 0.75f, -1.5f, 0.6f};
  const std::unique_ptr<Backend> backend = make_cpu_backend(make_fp32_backend());
  Buffer a = backend->allocate(x_rows, cols);
  std::copy(x.begin(), x.end(), a.data(MemorySpace::kHost));
  Buffer b = backend->allocate(y_rows, cols);
  std::copy(y.begin(), y.end(), b.data(MemorySpace::kHost));
  backend->scatter_add_rows(a, rows, b, weights);
  std::vector<double> want(x.begin(), x.end());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    for (int j = 0; j < cols; ++j)
      want[static_cast<std::size_t>(rows[i] * cols + j)] +=
          double{weights[i]} * y[i * cols + static_cast<std::size_t>(j)];
  }
  const float* got = a.data(MemorySpace::kHost);
  for (std::size_t n = 0; n < want.size(); ++n) {
    const bool touched = std::find(rows.begin(), rows.end(), static_cast<int>(n) / cols) != rows.end();
    if (!touched) {
      ASSERT_EQ(got[n], x[n]) << n;
      continue;
    }
    // two roundings (the product, the sum), each within eps of its result
    const double bound = 2 * kEps * (std::abs(x[n]) + std::abs(want[n] - x[n])) + 1e-30;
    ASSERT_NEAR(got[n], want[n], bound) << n;
  }
}

// The leading rows of a buffer are its memory, not a copy; fill_zero clears every element.
TEST(CpuBackend, LeadingRowsShareMemoryAndFillZeroClears) {
  const std::unique_ptr<Backend> backend = make_cpu_backend(make_fp32_backend());
  Buffer a = backend->allocate(5, 3);
  std::fill_n(a.data(MemorySpace::kHost), a.numel(), 2.0f);
  Buffer head = a.leading_rows(2);
  ASSERT_EQ(head.rows(), 2);
  ASSERT_EQ(head.cols(), 3);
  EXPECT_EQ(head.data(MemorySpace::kHost), a.data(MemorySpace::kHost));
  backend->fill_zero(head);
  for (std::int64_t i = 0; i < a.numel(); ++i) EXPECT_EQ(a.data(MemorySpace::kHost)[i], i < 6 ? 0.0f : 2.0f) << i;
}

// linear_fp32 on a bf16 backend is the fp32 backend's product bit for bit, normed input included.
TEST(CpuBackend, Fp32ProductsBesideBf16MatchTheFp32Backend) {
  std::mt19937 rng(5);
  const int rows = 7, cols = 48, out = 5;
  const std::vector<float> x = random_vector(static_cast<std::size_t>(rows) * cols, rng);
  const std::vector<float> w = random_vector(static_cast<std::size_t>(out) * cols, rng);
  const std::vector<float> g = random_vector(static_cast<std::size_t>(cols), rng);
  const TensorView w_view{"w", DType::kF32, static_cast<std::int64_t>(out), static_cast<std::int64_t>(cols), w.data()};
  const TensorView g_view{"g", DType::kF32, 1, static_cast<std::int64_t>(cols), g.data()};
  std::vector<std::vector<float>> results;
  for (const bool bf16 : {false, true}) {
    const std::unique_ptr<Backend> backend = make_cpu_backend(bf16 ? make_bf16_backend() : make_fp32_backend());
    const Weight weight = backend->upload(w_view), norm_weight = backend->upload(g_view);
    Buffer in = backend->allocate(rows, cols), y = backend->allocate(rows, out);
    std::copy(x.begin(), x.end(), in.data(MemorySpace::kHost));
    const LinearTarget target{&weight, &y};
    backend->linear_fp32(normed(in, {&norm_weight, 0.0f, 1e-5f}), {&target, 1});
    results.emplace_back(y.data(MemorySpace::kHost), y.data(MemorySpace::kHost) + y.numel());
  }
  EXPECT_EQ(results[0], results[1]);
}

// ALiBi of head h: BLOOM's and MPT's slope * (j - i) after the scale, or Falcon-RW's before it,
// slope * j with j and the product rounded to bf16 as torch rounds them.
double alibi_after_scale(const AttentionShape& s, int h, int i, int j) {
  return s.alibi_slopes.empty() || s.alibi_before_scale ? 0.0 : static_cast<double>(s.alibi_slopes[h]) * (j - i);
}
double alibi_before_scale(const AttentionShape& s, int h, int j) {
  if (s.alibi_slopes.empty() || !s.alibi_before_scale) return 0.0;
  const float position = bf16_to_f32(f32_to_bf16(static_cast<float>(j)));
  return bf16_to_f32(f32_to_bf16(s.alibi_slopes[h] * position));
}

// Naive attention: full score rows, mask, softmax and weighted sums, in double.
struct NaiveAttention {
  std::vector<double> probs;  // [heads, seq, seq]
  std::vector<double> out;    // [seq, heads*d]
};

NaiveAttention naive_attention(const AttentionShape& s, const std::vector<float>& q, const std::vector<float>& k,
                               const std::vector<float>& v) {
  const int d = s.head_dim, group = s.heads / s.kv_heads;
  NaiveAttention r{std::vector<double>(static_cast<std::size_t>(s.heads) * s.seq * s.seq, 0.0),
                   std::vector<double>(static_cast<std::size_t>(s.seq) * s.heads * d, 0.0)};
  for (int h = 0; h < s.heads; ++h) {
    const int g = h / group;
    for (int i = 0; i < s.seq; ++i) {
      std::vector<double> row(static_cast<std::size_t>(s.seq), -INFINITY);
      double mx = -INFINITY;
      for (int j = 0; j <= i; ++j) {
        if (s.window > 0 && i - j >= s.window) continue;
        double dot = 0;
        for (int c = 0; c < d; ++c)
          dot += static_cast<double>(q[(i * s.heads + h) * d + c]) * k[(j * s.kv_heads + g) * d + c];
        row[j] = (dot + alibi_before_scale(s, h, j)) * s.scale + alibi_after_scale(s, h, i, j);
        mx = std::max(mx, row[j]);
      }
      double sum = 0;
      for (int j = 0; j < s.seq; ++j) sum += row[j] == -INFINITY ? 0 : std::exp(row[j] - mx);
      for (int j = 0; j < s.seq; ++j) {
        const double p = row[j] == -INFINITY ? 0 : std::exp(row[j] - mx) / sum;
        r.probs[(static_cast<std::size_t>(h) * s.seq + i) * s.seq + j] = p;
        for (int c = 0; c < d; ++c) r.out[(i * s.heads + h) * d + c] += p * v[(j * s.kv_heads + g) * d + c];
      }
    }
  }
  return r;
}

enum class Alibi { kNone, kAfterScale, kBeforeScale };

class AttentionTest : public ::testing::TestWithParam<std::tuple<int, int, Alibi>> {};

TEST_P(AttentionTest, MatchesNaiveProbabilitiesOutputsAndCapturedRows) {
  const auto [window, kv_heads, alibi] = GetParam();
  AttentionShape s{150, 4, kv_heads, 16, window, 0.0f};
  s.scale = 1.0f / std::sqrt(16.0f);
  const std::vector<float> slopes = {0.37f, 0.09f, 0.021f, 0.0049f};
  if (alibi != Alibi::kNone) s.alibi_slopes = slopes;
  s.alibi_before_scale = alibi == Alibi::kBeforeScale;
  std::mt19937 rng(5);
  const auto q = random_vector(static_cast<std::size_t>(s.seq) * s.heads * s.head_dim, rng, 2.0f);
  const auto k = random_vector(static_cast<std::size_t>(s.seq) * s.kv_heads * s.head_dim, rng, 2.0f);
  const auto v = random_vector(static_cast<std::size_t>(s.seq) * s.kv_heads * s.head_dim, rng);
  const NaiveAttention ref = naive_attention(s, q, k, v);

  const std::vector<int> rows = {0, 1, 63, 64, 65, 100, 149};
  std::vector<float> captured(static_cast<std::size_t>(s.heads) * rows.size() * s.seq, -1.0f);
  std::vector<float> out(static_cast<std::size_t>(s.seq) * s.heads * s.head_dim);
  AttentionScratch scratch;
  const std::vector<float> gates = {1.0f, 0.0f, 1.0f, 0.5f};
  causal_attention(
      s, q.data(), k.data(), v.data(), out.data(), rows,
      [&](const AttentionRows& block) {
        std::copy_n(block.probs, block.heads() * rows.size() * s.seq,
                    captured.data() + block.head_begin * rows.size() * s.seq);
      },
      gates, scratch);

  // Probabilities: softmax over n keys of fp32 scores with a d-term dot product each.
  const double prob_tol = 4 * (s.head_dim + 8) * kEps * 2.0 * 2.0 * s.head_dim * s.scale;
  for (int h = 0; h < s.heads; ++h) {
    for (std::size_t r = 0; r < rows.size(); ++r) {
      for (int j = 0; j < s.seq; ++j) {
        const double exact = ref.probs[(static_cast<std::size_t>(h) * s.seq + rows[r]) * s.seq + j];
        const float got = captured[(h * rows.size() + r) * s.seq + j];
        if (exact == 0.0) {
          EXPECT_EQ(got, 0.0f) << "masked key must be exactly zero: head " << h << " row " << rows[r] << " key " << j;
        } else {
          EXPECT_NEAR(got, exact, prob_tol * exact + 1e-7);
        }
      }
    }
  }
  for (int i = 0; i < s.seq; ++i) {
    for (int h = 0; h < s.heads; ++h) {
      for (int c = 0; c < s.head_dim; ++c) {
        const double exact = gates[h] * ref.out[(i * s.heads + h) * s.head_dim + c];
        EXPECT_NEAR(out[(i * s.heads + h) * s.head_dim + c], exact, 1e-5) << i << " " << h;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(WindowsGqaAndAlibi, AttentionTest,
                         ::testing::Values(std::make_tuple(0, 4, Alibi::kNone), std::make_tuple(0, 2, Alibi::kNone),
                                           std::make_tuple(40, 1, Alibi::kNone), std::make_tuple(64, 2, Alibi::kNone),
                                           std::make_tuple(200, 4, Alibi::kNone),
                                           std::make_tuple(0, 4, Alibi::kAfterScale),
                                           std::make_tuple(40, 2, Alibi::kAfterScale),
                                           std::make_tuple(0, 2, Alibi::kBeforeScale)));

}  // namespace
}  // namespace attngeom
