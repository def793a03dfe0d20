// The fp32-on-AMX kernel against its two claims: the three-term split of an fp32 value
// is exact, and the product is an fp32 GEMM (error within fp32's gamma_K bound of the
// double-precision product, far inside what bf16 activations would give).
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <random>
#include <vector>

#include "ops/gemm.h"
#include "util/half.h"

namespace attngeom {
namespace {

constexpr double kEps = FLT_EPSILON;

TEST(Bf16x3, SplitRecoversEveryFp32ValueExactly) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<std::uint32_t> mantissa(0, (1u << 23) - 1);
  std::uniform_int_distribution<int> exponent(-110, 127);
  std::vector<float> x = {1.0f,
                          -1.0f,
                          FLT_MAX,
                          -FLT_MAX,
                          0.0f,
                          std::ldexp(1.0f, -110),
                          1.0f + FLT_EPSILON,
                          std::nextafter(2.0f, 0.0f),
                          -std::nextafter(1.0f, 0.0f)};
  for (int i = 0; i < 100000; ++i) {
    const float unit = 1.0f + static_cast<float>(mantissa(rng)) * std::ldexp(1.0f, -23);  // every significand bit
    x.push_back((i % 2 ? -1.0f : 1.0f) * std::ldexp(unit, exponent(rng)));
  }
  const auto count = static_cast<std::int64_t>(x.size());
  std::vector<std::uint16_t> terms(3 * x.size());
  split_into_bf16_terms(x.data(), count, terms.data(), terms.data() + count, terms.data() + 2 * count);
  for (std::int64_t i = 0; i < count; ++i) {
    const double sum =
        static_cast<double>(bf16_to_f32(terms[2 * count + i])) + bf16_to_f32(terms[count + i]) + bf16_to_f32(terms[i]);
    ASSERT_EQ(sum, static_cast<double>(x[i])) << "x = " << x[i];
  }
}

// y = x w^T against the double-precision product, for bf16 and f32 weights.
void expect_fp32_accurate(LinearBackend& backend, DType dtype) {
  std::mt19937 rng(12);
  std::normal_distribution<float> dist;
  const int rows = 67, in = 300, out = 129;
  std::vector<float> x(static_cast<std::size_t>(rows) * in), w(static_cast<std::size_t>(out) * in);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = dist(rng) * (i % 7 == 0 ? 100.0f : 1.0f);  // mixed magnitudes
  std::vector<std::uint16_t> w_bf16(w.size());
  for (std::size_t i = 0; i < w.size(); ++i) {
    w_bf16[i] = f32_to_bf16(dist(rng) * 0.05f);
    w[i] = bf16_to_f32(w_bf16[i]);
  }
  const TensorView view{"w", dtype, out, in,
                        dtype == DType::kBF16 ? static_cast<const void*>(w_bf16.data()) : w.data()};
  std::vector<float> y(static_cast<std::size_t>(rows) * out);
  backend.linear(x.data(), rows, view, y.data());
  for (int r = 0; r < rows; ++r) {
    for (int o = 0; o < out; ++o) {
      double exact = 0, magnitude = 0;
      for (int i = 0; i < in; ++i) {
        const double term = static_cast<double>(x[r * in + i]) * w[o * in + i];
        exact += term;
        magnitude += std::abs(term);
      }
      // Three fp32-accumulated partial sums plus two additions: gamma_{in+2}.
      ASSERT_NEAR(y[r * out + o], exact, 2 * (in + 2) * kEps * magnitude) << dtype_name(dtype) << " " << r << "," << o;
    }
  }
}

TEST(Bf16x3, ProductIsAnFp32GemmAgainstBf16Weights) {
  auto backend = make_bf16x3_backend();
  EXPECT_EQ(backend->precision(), Precision::kFp32);
  expect_fp32_accurate(*backend, DType::kBF16);
}

TEST(Bf16x3, NonBf16WeightsTakeTheSgemmPath) {
  auto backend = make_bf16x3_backend();
  expect_fp32_accurate(*backend, DType::kF32);
}

TEST(Bf16x3, MakeBackendHonoursTheFp32ChoiceAndRecordsWhatRuns) {
  EXPECT_EQ(make_backend(Precision::kFp32, Fp32Matmul::kBf16x3, DType::kBF16)->kernel(), "onednn-bf16x3");
  EXPECT_EQ(make_backend(Precision::kFp32, Fp32Matmul::kSgemm, DType::kBF16)->kernel(), "onednn-sgemm");
  EXPECT_EQ(make_backend(Precision::kBf16, Fp32Matmul::kBf16x3, DType::kBF16)->kernel(), "onednn-bf16");
  // F32/F16 weights: bf16x3 would run sgemm for every product, and says so.
  EXPECT_EQ(make_backend(Precision::kFp32, Fp32Matmul::kBf16x3, DType::kF32)->kernel(), "onednn-sgemm");
  EXPECT_EQ(make_backend(Precision::kFp32, Fp32Matmul::kBf16x3, DType::kF16)->kernel(), "onednn-sgemm");
}

}  // namespace
}  // namespace attngeom
