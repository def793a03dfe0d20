// Token-level top-N (keep_top_n and causal_attention's head_topn) against a naive
// double-precision reference: sort the keys by (probability desc, index asc), keep the
// first N, renormalise. Also: N >= every row's key count, or N = 0, is a bitwise no-op.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "ops/attention.h"
#include "random_values.h"

namespace attngeom {
namespace {

using testing::random_vector;

constexpr double kEps = std::numeric_limits<float>::epsilon();

// The reference: indices of the n largest (ties to the lower index), renormalised in double.
std::vector<double> naive_top_n(const std::vector<double>& p, int n) {
  std::vector<int> idx(p.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return p[a] > p[b]; });  // stable: lower index first
  std::vector<double> out(p.size(), 0.0);
  if (n <= 0 || n >= static_cast<int>(p.size())) return p;
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += p[idx[i]];
  for (int i = 0; i < n; ++i) out[idx[i]] = p[idx[i]] / sum;
  return out;
}

TEST(KeepTopN, MatchesNaiveSortIncludingTies) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> level(1, 6);  // few distinct values: many ties
  std::normal_distribution<float> noise(0.0f, 1.0f);
  int order[64];
  for (int trial = 0; trial < 400; ++trial) {
    const int count = 1 + trial % 64;
    std::vector<float> row(count);
    for (auto& x : row) x = trial % 2 == 0 ? static_cast<float>(level(rng)) / 7.0f : std::exp(noise(rng));
    const std::vector<double> wide(row.begin(), row.end());
    for (const int n : {0, 1, 2, 3, count / 2, count - 1, count, count + 5}) {
      std::vector<float> got = row;
      keep_top_n(got.data(), count, n, order);
      const std::vector<double> want = naive_top_n(wide, n);
      for (int i = 0; i < count; ++i) {
        if (want[i] == 0.0 && wide[i] != 0.0) {
          EXPECT_EQ(got[i], 0.0f) << "trial " << trial << " n " << n << " key " << i << " must be dropped";
        } else {
          EXPECT_NEAR(got[i], want[i], 2 * kEps * want[i]) << "trial " << trial << " n " << n << " key " << i;
        }
      }
    }
  }
}

TEST(KeepTopN, TiesGoToTheLowerIndex) {
  int order[6];
  std::vector<float> row = {0.1f, 0.2f, 0.2f, 0.1f, 0.2f, 0.2f};
  keep_top_n(row.data(), 6, 2, order);
  EXPECT_EQ(row, (std::vector<float>{0.0f, 0.5f, 0.5f, 0.0f, 0.0f, 0.0f}));
  row = {0.25f, 0.25f, 0.25f, 0.25f};
  keep_top_n(row.data(), 4, 3, order);
  const float third = static_cast<float>(0.25 / 0.75);
  EXPECT_EQ(row, (std::vector<float>{third, third, third, 0.0f}));
}

TEST(KeepTopN, AllKeysOrZeroIsBitwiseNoOp) {
  int order[5];
  const std::vector<float> row = {0.3f, 0.1f, 0.2f, 0.15f, 0.25f};
  for (const int n : {0, -1, 5, 6, 1000}) {
    std::vector<float> got = row;
    keep_top_n(got.data(), 5, n, order);
    EXPECT_EQ(got, row) << n;
  }
}

// Naive attention in double with per-head top-N: probs [heads, seq, seq], out [seq, heads*d].
struct Naive {
  std::vector<double> probs, out;
  std::vector<bool> ambiguous;  // [heads, seq]: the N-th and (N+1)-th probabilities nearly tie
};

Naive naive_attention_top_n(const AttentionShape& s, const std::vector<float>& q, const std::vector<float>& k,
                            const std::vector<float>& v, const std::vector<int>& topn) {
  const int d = s.head_dim;
  Naive r{std::vector<double>(static_cast<std::size_t>(s.heads) * s.seq * s.seq, 0.0),
          std::vector<double>(static_cast<std::size_t>(s.seq) * s.heads * d, 0.0),
          std::vector<bool>(static_cast<std::size_t>(s.heads) * s.seq, false)};
  for (int h = 0; h < s.heads; ++h) {
    const int g = h / (s.heads / s.kv_heads);
    for (int i = 0; i < s.seq; ++i) {
      const int lo = first_visible_key(s, i);
      std::vector<double> p(static_cast<std::size_t>(i - lo + 1));
      double mx = -1e300;
      for (int j = lo; j <= i; ++j) {
        double dot = 0;
        for (int c = 0; c < d; ++c) dot += double(q[(i * s.heads + h) * d + c]) * k[(j * s.kv_heads + g) * d + c];
        p[j - lo] = dot * s.scale;
        mx = std::max(mx, p[j - lo]);
      }
      double sum = 0;
      for (auto& x : p) sum += (x = std::exp(x - mx));
      for (auto& x : p) x /= sum;
      const int n = topn[h];
      if (n > 0 && n < static_cast<int>(p.size())) {
        std::vector<double> sorted = p;
        std::sort(sorted.begin(), sorted.end(), std::greater<>());
        r.ambiguous[h * s.seq + i] = sorted[n - 1] - sorted[n] < 1e-5 * sorted[n - 1];
      }
      p = naive_top_n(p, n);
      for (int j = lo; j <= i; ++j) {
        r.probs[(static_cast<std::size_t>(h) * s.seq + i) * s.seq + j] = p[j - lo];
        for (int c = 0; c < d; ++c) r.out[(i * s.heads + h) * d + c] += p[j - lo] * v[(j * s.kv_heads + g) * d + c];
      }
    }
  }
  return r;
}

class TopNAttentionTest : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(TopNAttentionTest, MatchesNaiveProbabilitiesAndOutputs) {
  const auto [window, kv_heads] = GetParam();
  AttentionShape s{130, 4, kv_heads, 16, window, 1.0f / 4.0f};
  std::mt19937 rng(21);
  const auto q = random_vector(static_cast<std::size_t>(s.seq) * s.heads * s.head_dim, rng, 2.0f);
  const auto k = random_vector(static_cast<std::size_t>(s.seq) * s.kv_heads * s.head_dim, rng, 2.0f);
  const auto v = random_vector(static_cast<std::size_t>(s.seq) * s.kv_heads * s.head_dim, rng, 1.0f);
  const std::vector<int> topn = {1, 3, 0, 17};  // head 2 keeps every key
  const Naive ref = naive_attention_top_n(s, q, k, v, topn);

  std::vector<int> rows(s.seq);
  std::iota(rows.begin(), rows.end(), 0);
  std::vector<float> captured(static_cast<std::size_t>(s.heads) * s.seq * s.seq);
  std::vector<float> out(static_cast<std::size_t>(s.seq) * s.heads * s.head_dim);
  AttentionScratch scratch;
  causal_attention(
      s, q.data(), k.data(), v.data(), out.data(), rows,
      [&](const AttentionRows& block) {
        std::copy_n(block.probs, static_cast<std::size_t>(block.heads()) * s.seq * s.seq,
                    captured.data() + static_cast<std::size_t>(block.head_begin) * s.seq * s.seq);
      },
      {}, scratch, topn);

  const double prob_tol = 4 * (s.head_dim + 8) * kEps * 2.0 * 2.0 * s.head_dim * s.scale;
  int ambiguous = 0;
  for (int h = 0; h < s.heads; ++h) {
    for (int i = 0; i < s.seq; ++i) {
      if (ref.ambiguous[h * s.seq + i]) {  // fp32 may legitimately pick the other key
        ++ambiguous;
        continue;
      }
      int kept = 0;
      for (int j = 0; j < s.seq; ++j) {
        const double want = ref.probs[(static_cast<std::size_t>(h) * s.seq + i) * s.seq + j];
        const float got = captured[(static_cast<std::size_t>(h) * s.seq + i) * s.seq + j];
        if (want == 0.0) {
          EXPECT_EQ(got, 0.0f) << "head " << h << " query " << i << " key " << j << " must be dropped";
        } else {
          ++kept;
          EXPECT_NEAR(got, want, prob_tol * want + 1e-7) << "head " << h << " query " << i << " key " << j;
        }
      }
      const int visible = i - first_visible_key(s, i) + 1;
      EXPECT_EQ(kept, topn[h] > 0 ? std::min(topn[h], visible) : visible) << "head " << h << " query " << i;
      for (int c = 0; c < s.head_dim; ++c) {
        const std::size_t at = (static_cast<std::size_t>(i) * s.heads + h) * s.head_dim + c;
        EXPECT_NEAR(out[at], ref.out[at], 1e-5) << "head " << h << " query " << i;
      }
    }
  }
  EXPECT_LT(ambiguous, s.heads * s.seq / 100) << "too many near-ties to test";
}

TEST_P(TopNAttentionTest, NAtLeastEveryRowsKeysIsBitwiseUnmodified) {
  const auto [window, kv_heads] = GetParam();
  AttentionShape s{90, 4, kv_heads, 16, window, 0.25f};
  std::mt19937 rng(22);
  const auto q = random_vector(static_cast<std::size_t>(s.seq) * s.heads * s.head_dim, rng, 2.0f);
  const auto k = random_vector(static_cast<std::size_t>(s.seq) * s.kv_heads * s.head_dim, rng, 2.0f);
  const auto v = random_vector(static_cast<std::size_t>(s.seq) * s.kv_heads * s.head_dim, rng, 1.0f);
  const std::vector<int> rows = {0, 5, 63, 64, 89};
  const auto run = [&](const std::vector<int>& topn, std::vector<float>& probs) {
    std::vector<float> out(static_cast<std::size_t>(s.seq) * s.heads * s.head_dim);
    probs.assign(static_cast<std::size_t>(s.heads) * rows.size() * s.seq, -1.0f);
    AttentionScratch scratch;
    causal_attention(
        s, q.data(), k.data(), v.data(), out.data(), rows,
        [&](const AttentionRows& block) {
          std::copy_n(block.probs, block.heads() * rows.size() * s.seq,
                      probs.data() + block.head_begin * rows.size() * s.seq);
        },
        {}, scratch, topn);
    return out;
  };
  std::vector<float> base_probs, probs;
  const std::vector<float> base = run({}, base_probs);
  for (const std::vector<int>& topn : {std::vector<int>{s.seq, s.seq, s.seq, s.seq}, std::vector<int>{0, 0, 0, 0},
                                       std::vector<int>{1000, s.seq + 1, 0, s.seq}}) {
    EXPECT_EQ(run(topn, probs), base);
    EXPECT_EQ(probs, base_probs);
  }
}

INSTANTIATE_TEST_SUITE_P(WindowsAndGqa, TopNAttentionTest,
                         ::testing::Values(std::make_tuple(0, 4), std::make_tuple(0, 2), std::make_tuple(40, 1),
                                           std::make_tuple(64, 2)));

}  // namespace
}  // namespace attngeom
