// The cosine deviations on a GPU (ops/cuda_pair_deviations.h) against geometry's
// cosine_deviation from a double Gram on the CPU, and analyze's observer with them against
// analyze_row head by head. Skipped where no GPU is visible.
//
// Tolerances: each cosine <v_i, v_l> / (||v_i|| ||v_l||) is a d-term double dot product of
// floats, exact products summed in some order (error at most gamma_d times the sum of
// |products|, which the norms bound by Cauchy-Schwarz) plus a division, a product and two
// square roots: within (d + 4) u of the exact cosine on either side, u = 2^-53; the model's
// exp adds an ulp. So each delta of the GPU lies within e = 2 (d + 6) u of the CPU's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "analysis/gpu_deviations.h"
#include "geometry/cosine_model.h"
#include "geometry/selection_metrics.h"
#include "gpu_visible.h"
#include "ops/cuda_backend.h"
#include "ops/cuda_pair_deviations.h"
#include "sequence_analyzer_harness.h"

namespace attngeom {
namespace {

using testing::gpu_visible;

constexpr double kUnit = std::numeric_limits<double>::epsilon() / 2;  // u = 2^-53

struct Case {
  int heads, seq, dim;
  std::vector<int> keys;                   // [rows]
  std::vector<float> values;               // [heads, seq, dim]
  std::vector<PairDeviationModel> models;  // [heads, rows]
};

// Gaussian values with a zero vector, a repeated vector and a sink far from the rest; models
// that fit nothing, independent directions (beta = inf) and one constant cosine (beta = 0).
Case make_case(int heads, int seq, int dim, std::vector<int> keys) {
  Case c{heads, seq, dim, std::move(keys), std::vector<float>(static_cast<std::size_t>(heads * seq * dim)), {}};
  std::mt19937_64 rng(23);
  std::normal_distribution<float> gauss(0.0f, 1.0f);
  for (float& v : c.values) v = gauss(rng);
  for (int h = 0; h < heads; ++h) {
    float* head = c.values.data() + static_cast<std::size_t>(h * seq * dim);
    std::fill_n(head + (1 + h % 3) * dim, dim, 0.0f);                              // a zero vector
    std::copy_n(head + 2 * dim, dim, head + (seq - 1) * dim);                      // a repeat
    for (int t = 0; t < dim; ++t) head[t] = 5.0f + 0.01f * static_cast<float>(t);  // the sink
  }
  const double inf = std::numeric_limits<double>::infinity();
  const PairDeviationModel kinds[] = {{0.3, 0.2}, {inf, 0.0}, {0.0, -0.5}, {0.05, 0.9}};
  for (std::size_t i = 0; i < static_cast<std::size_t>(heads) * c.keys.size(); ++i) c.models.push_back(kinds[i % 4]);
  return c;
}

void expect_matches_double_gram(const Case& c, std::uint64_t strip_bytes = kGramStripBytes) {
  const std::size_t rows = c.keys.size();
  std::vector<PairDeviationTotals> totals(c.models.size());
  CudaPairDeviations gpu(0, strip_bytes);
  gpu.compute(c.values.data(), c.heads, c.seq, c.dim, c.keys, c.models, totals);
  const double e = 2.0 * (c.dim + 6) * kUnit;
  for (int h = 0; h < c.heads; ++h) {
    for (std::size_t r = 0; r < rows; ++r) {
      const auto keys = static_cast<std::size_t>(c.keys[r]);
      const std::vector<float> alpha(keys, 1.0f / static_cast<float>(keys));
      const geometry::HeadRowView row{
          alpha, std::span<const float>(c.values.data() + static_cast<std::size_t>(h * c.seq * c.dim), keys * c.dim),
          static_cast<std::size_t>(c.dim)};
      const PairDeviationModel& m = c.models[static_cast<std::size_t>(h) * rows + r];
      const geometry::CosineDeviation cpu =
          geometry::cosine_deviation(row, geometry::row_gram(row), geometry::CosineModel{m.beta, m.rho_0});
      const PairDeviationTotals& got = totals[static_cast<std::size_t>(h) * rows + r];
      SCOPED_TRACE("head " + std::to_string(h) + ", keys " + std::to_string(keys));
      EXPECT_EQ(got.pairs, cpu.pairs);
      EXPECT_NEAR(got.max_abs, cpu.max_abs, e);
      // d mean(delta^2): each square moves by at most 2 |delta| e + e^2; the two sums of
      // `pairs` positive terms in different orders by at most pairs u of the total each.
      const double sigma2 = got.pairs > 0 ? c.dim * got.sum_sq / static_cast<double>(got.pairs) : 0.0;
      const double bound =
          c.dim * (2.0 * cpu.max_abs * e + e * e) + 2.0 * static_cast<double>(cpu.pairs) * kUnit * cpu.sigma2;
      EXPECT_NEAR(sigma2, cpu.sigma2, bound);
    }
  }
}

// Rows in ascending order walk the lags; one row, or rows out of order, take their own pairs.
TEST(CudaPairDeviations, MatchTheDoubleGramOnTheCpu) {
  if (!gpu_visible()) GTEST_SKIP() << "no GPU visible";
  for (const std::vector<int>& keys : {std::vector<int>{1, 2, 41, 299, 300}, std::vector<int>{300},
                                       std::vector<int>{300, 41, 1, 2}, std::vector<int>{1, 2, 3, 4, 5, 6, 7, 70}}) {
    SCOPED_TRACE(std::to_string(keys.size()) +
                 " rows, walks the lags: " + std::to_string(CudaPairDeviations::walks_lags(keys)));
    expect_matches_double_gram(make_case(3, 300, 64, keys));
  }
}

// The walk visits the longest row's pairs once and each row's terms at each lag; the rows' own
// passes each row's pairs.
TEST(CudaPairDeviations, WalkTheLagsWhereTheRowsOwnPassesWouldVisitMorePairs) {
  EXPECT_FALSE(CudaPairDeviations::walks_lags(std::vector<int>{300}));
  EXPECT_FALSE(CudaPairDeviations::walks_lags(std::vector<int>{1, 300}));
  EXPECT_TRUE(CudaPairDeviations::walks_lags(std::vector<int>{1, 2, 41, 299, 300}));
  EXPECT_TRUE(CudaPairDeviations::walks_lags(std::vector<int>{200, 230, 300}));
  EXPECT_FALSE(CudaPairDeviations::walks_lags(std::vector<int>{300, 1}));  // out of order
  EXPECT_FALSE(CudaPairDeviations::walks_lags(std::vector<int>{1, 2, 3, 4, 5, 6, 7, 70}));
}

TEST(CudaPairDeviations, MatchAcrossStripsOfTheGram) {
  if (!gpu_visible()) GTEST_SKIP() << "no GPU visible";
  // Two heads' 12000^2 doubles exceed the 1 GiB that a batch's strips take: strips of 5568 columns.
  expect_matches_double_gram(make_case(2, 12000, 8, {700, 12000}));
  // Budgets of a few columns: strips of 64 columns with all three heads in a batch, with one
  // head per batch, and of 128; rows ending in the first strip, inside others and at their ends.
  const std::uint64_t column = 300 * sizeof(double);
  for (const std::vector<int>& keys : {std::vector<int>{1, 2, 41, 64, 65, 200, 299, 300}, std::vector<int>{300},
                                       std::vector<int>{300, 41, 1, 128, 2}}) {
    for (const std::uint64_t budget : {3 * 64 * column, 64 * column, 3 * 130 * column}) {
      SCOPED_TRACE(std::to_string(keys.size()) + " rows, " + std::to_string(budget / column) + " columns");
      expect_matches_double_gram(make_case(3, 300, 64, keys), budget);
    }
  }
}

// Beside the weights, memory is linear in T: the strips take a fixed budget.
TEST(CudaPairDeviations, MemoryIsLinearInTheKeys) {
  for (const int keys : {16384, 32768, 65536}) {
    EXPECT_LE(CudaPairDeviations::bytes(8, 2 * keys, 128, 128), 2 * CudaPairDeviations::bytes(8, keys, 128, 128))
        << keys;
  }
  EXPECT_LT(CudaPairDeviations::bytes(8, 32768, 128, 128), 3 * kGramStripBytes / 2);
}

// analyze's observer with its deviations on the GPU against analyze_row head by head, whose
// screen differs only in sigma^2 (its Gram expansion errs by up to gamma_256 ~ 1.5e-5 of a
// sum that is within a few times sigma^2 here): every field within 1e-4 of its size.
TEST(CudaPairDeviations, AnalyzerRecordMatchesPerHeadAnalysis) {
  if (!gpu_visible()) GTEST_SKIP() << "no GPU visible";
  for (const int kv_heads : {2, kHeads}) {
    const AnalyzedSequence s = analyze_sequence({0, 5, 20, 47}, kv_heads, [] { return make_gpu_deviations(0); });
    for (const auto& [got, want] :
         {std::pair(&s.analyzed.per_n, &s.expected.per_n), std::pair(&s.analyzed.per_row, &s.expected.per_row)}) {
      ASSERT_EQ(got->size(), want->size());
      for (std::size_t i = 0; i < got->size(); ++i) {
        if (std::isnan((*want)[i])) {
          EXPECT_TRUE(std::isnan((*got)[i])) << i;
          continue;
        }
        EXPECT_NEAR((*got)[i], (*want)[i], 1e-4 * std::max(1.0, std::abs((*want)[i]))) << "field " << i;
      }
    }
  }
}

}  // namespace
}  // namespace attngeom
