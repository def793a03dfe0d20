// Products against naive scalar references. Tolerances come from fp32 rounding: a K-term
// dot product has error at most ~K * eps * sum|a_k b_k| (Higham's gamma_K).
#include "ops/gemm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "ops/bf16_matmul.h"
#include "ops/cpu_backend.h"
#include "random_values.h"

namespace attngeom {
namespace {

using testing::random_vector;

constexpr double kEps = std::numeric_limits<float>::epsilon();

TEST(Gemm, MatchesNaiveWithTransposesAndLeadingDims) {
  std::mt19937 rng(1);
  const int m = 37, n = 29, k = 53, lda = 60, ldb = 70, ldc = 31;
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      const auto a = random_vector(static_cast<std::size_t>(ta ? k : m) * lda, rng);
      const auto b = random_vector(static_cast<std::size_t>(tb ? n : k) * ldb, rng);
      std::vector<float> c(static_cast<std::size_t>(m) * ldc, 0.0f);
      gemm_f32(ta, tb, m, n, k, 0.5f, a.data(), lda, b.data(), ldb, 0.0f, c.data(), ldc);
      for (int i = 0; i < m; ++i) {
        for (int j = 0; j < n; ++j) {
          double exact = 0, magnitude = 0;
          for (int p = 0; p < k; ++p) {
            const double av = ta ? a[p * lda + i] : a[i * lda + p];
            const double bv = tb ? b[j * ldb + p] : b[p * ldb + j];
            exact += 0.5 * av * bv;
            magnitude += std::abs(0.5 * av * bv);
          }
          EXPECT_NEAR(c[i * ldc + j], exact, 2 * k * kEps * magnitude) << ta << tb << " " << i << "," << j;
        }
      }
    }
  }
}

TEST(Gemm, Fp32BackendWidensEveryWeightDtype) {
  std::mt19937 rng(2);
  const int rows = 5, in = 40, out = 23;
  const auto x = random_vector(static_cast<std::size_t>(rows) * in, rng);
  const auto w32 = random_vector(static_cast<std::size_t>(out) * in, rng);
  std::vector<std::uint16_t> w16(w32.size());
  auto backend = make_fp32_backend();
  for (const DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    std::vector<float> widened(w32.size());
    const void* data = w32.data();
    if (dtype == DType::kBF16) {
      for (std::size_t i = 0; i < w32.size(); ++i) w16[i] = f32_to_bf16(w32[i]);
      data = w16.data();
    } else if (dtype == DType::kF16) {
      // 1.5 * 2^e patterns are exact in f16: build weights from bit patterns instead.
      std::uniform_int_distribution<int> bits(0x2000, 0x4fff);
      for (auto& b : w16) b = static_cast<std::uint16_t>(bits(rng) | (rng() & 1 ? 0x8000 : 0));
      data = w16.data();
    }
    widen_to_f32(dtype, data, widened.data(), widened.size());
    const TensorView w{"w", dtype, out, in, data};
    std::vector<float> y(static_cast<std::size_t>(rows) * out);
    backend->linear(x.data(), rows, w, y.data());
    for (int r = 0; r < rows; ++r) {
      for (int o = 0; o < out; ++o) {
        double exact = 0, magnitude = 0;
        for (int i = 0; i < in; ++i) {
          exact += static_cast<double>(x[r * in + i]) * widened[o * in + i];
          magnitude += std::abs(static_cast<double>(x[r * in + i]) * widened[o * in + i]);
        }
        EXPECT_NEAR(y[r * out + o], exact, 2 * in * kEps * magnitude) << dtype_name(dtype);
      }
    }
  }
}

// q, k, v and gate, up read one input: converted once, each product must still be exactly
// what a call of its own gives, for every backend and weight dtype.
TEST(Gemm, SharedInputProductsMatchSeparateCallsBitForBit) {
  std::mt19937 rng(5);
  const int rows = 7, in = 48;
  const auto x = random_vector(static_cast<std::size_t>(rows) * in, rng);
  const auto w32 = random_vector(static_cast<std::size_t>(30) * in, rng);
  std::vector<std::uint16_t> w16(w32.size());
  for (std::size_t i = 0; i < w32.size(); ++i) w16[i] = f32_to_bf16(w32[i]);
  // Three weights of different widths, one of them F32 (the bf16x3 path sends it to sgemm).
  const TensorView a{"a", DType::kBF16, 11, in, w16.data()};
  const TensorView b{"b", DType::kF32, 5, in, w32.data() + 11 * in};
  const TensorView c{"c", DType::kBF16, 14, in, w16.data() + 16 * in};
  for (const auto make : {make_fp32_backend, make_bf16_backend, make_bf16x3_backend}) {
    const std::unique_ptr<LinearBackend> backend = make();
    std::vector<float> ya(rows * 11, 7.0f), yb(rows * 5, 7.0f), yc(rows * 14, 7.0f);  // overwritten, not added to
    const LinearOutput outputs[] = {{&a, ya.data()}, {&b, yb.data()}, {&c, yc.data()}};
    backend->linear_products(LinearInput{rows, in, x.data(), {}, nullptr}, outputs);
    for (const LinearOutput& output : outputs) {
      std::vector<float> alone(static_cast<std::size_t>(rows) * output.weight->rows);
      backend->linear(x.data(), rows, *output.weight, alone.data());
      for (std::size_t i = 0; i < alone.size(); ++i) {
        ASSERT_EQ(alone[i], output.y[i]) << backend->kernel() << " " << output.weight->name << " " << i;
      }
    }
  }
}

// A produced input (the forward's norms and activations) must give exactly the products of the
// same input stored, on every backend, across several row blocks and on all threads. A
// backend that multiplies in fp32 writes it to fp32_scratch; the bf16 one never does.
TEST(Gemm, ProducedInputMatchesStoredInputBitForBit) {
  std::mt19937 rng(6);
  const int rows = 70, in = 4100;  // 15 rows per 256 KiB block: five blocks, the last one short
  const auto x = random_vector(static_cast<std::size_t>(rows) * in, rng);
  const auto w32 = random_vector(static_cast<std::size_t>(9) * in, rng);
  std::vector<std::uint16_t> w16(w32.size());
  for (std::size_t i = 0; i < w32.size(); ++i) w16[i] = f32_to_bf16(w32[i]);
  const TensorView a{"a", DType::kBF16, 6, in, w16.data()};
  const TensorView b{"b", DType::kF32, 3, in, w32.data() + 6 * in};  // sends bf16x3 to sgemm, which needs fp32
  const auto produce = [&](std::int64_t begin, std::int64_t end, float* out) {
    std::copy(x.begin() + begin * in, x.begin() + end * in, out);
  };
  for (const auto make : {make_fp32_backend, make_bf16_backend, make_bf16x3_backend}) {
    for (const bool with_f32_weight : {false, true}) {
      const std::unique_ptr<LinearBackend> backend = make();
      const std::string where = std::string(backend->kernel()) + (with_f32_weight ? " with an F32 weight" : "");
      std::vector<float> stored_a(rows * 6), stored_b(rows * 3), produced_a(rows * 6, 7.0f), produced_b(rows * 3, 7.0f);
      const LinearOutput stored_outputs[] = {{&a, stored_a.data()}, {&b, stored_b.data()}};
      const LinearOutput produced_outputs[] = {{&a, produced_a.data()}, {&b, produced_b.data()}};
      const std::size_t count = with_f32_weight ? 2 : 1;
      backend->linear_products(LinearInput{rows, in, x.data(), {}, nullptr}, std::span(stored_outputs, count));
      std::vector<float> home(x.size(), -1.0f);
      backend->linear_products(LinearInput{rows, in, nullptr, produce, home.data()},
                               std::span(produced_outputs, count));
      ASSERT_EQ(produced_a, stored_a) << where;
      if (with_f32_weight) {
        ASSERT_EQ(produced_b, stored_b) << where;
      }
      const bool fp32_home =
          backend->kernel() == "onednn-sgemm" || (backend->kernel() == "onednn-bf16x3" && with_f32_weight);
      if (fp32_home) {
        EXPECT_EQ(home, x) << where;
      } else {
        EXPECT_TRUE(std::all_of(home.begin(), home.end(), [](float v) { return v == -1.0f; })) << where;
      }
    }
  }
}

// A deep product (in >= 2 out) goes out in column blocks, the last one short, into a dense
// or a wider destination, and is summed onto it: each way of issuing it is bf16 products
// (exact in fp32) summed in fp32, within gamma_in (+1 for the sum) of the double product.
void expect_deep_product_accurate(DeepProducts deep, std::int64_t ldy, bool accumulate) {
  std::mt19937 rng(7);
  const std::int64_t rows = 9, in = 1100, out = Bf16Matmul::kDeepBlockColumns + 18;
  ASSERT_GE(in, 2 * out);
  std::vector<std::uint16_t> x(static_cast<std::size_t>(rows * in)), w(static_cast<std::size_t>(out * in));
  for (auto& v : x) v = f32_to_bf16(random_vector(1, rng)[0]);
  for (auto& v : w) v = f32_to_bf16(random_vector(1, rng, 0.05f)[0]);
  const auto before = random_vector(static_cast<std::size_t>(rows * ldy), rng);
  const std::string how = std::string(deep == DeepProducts::kOneCall ? "one call" : "column blocks") +
                          (accumulate ? " +=" : " =") + ", ldy " + std::to_string(ldy);
  Bf16Matmul matmul(deep);
  std::vector<float> y = before;
  matmul.multiply(rows, in, out, x.data(), w.data(), y.data(), ldy, accumulate);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t o = 0; o < ldy; ++o) {
      const std::size_t at = static_cast<std::size_t>(r * ldy + o);
      if (o >= out) {
        ASSERT_EQ(y[at], before[at]) << how << ": column " << o << " lies outside the product";
        continue;
      }
      double exact = accumulate ? before[at] : 0.0, magnitude = std::abs(exact);
      for (std::int64_t i = 0; i < in; ++i) {
        const double term = static_cast<double>(bf16_to_f32(x[r * in + i])) * bf16_to_f32(w[o * in + i]);
        exact += term;
        magnitude += std::abs(term);
      }
      ASSERT_NEAR(y[at], exact, 2 * (in + 1) * kEps * magnitude) << how << ": " << r << "," << o;
    }
  }
}

TEST(Gemm, Bf16DeepProductsMatchTheDoubleProductEveryWay) {
  const std::int64_t out = Bf16Matmul::kDeepBlockColumns + 18;
  for (const DeepProducts deep : {DeepProducts::kColumnBlocks, DeepProducts::kOneCall}) {
    for (const std::int64_t ldy : {out, out + 5}) {
      for (const bool accumulate : {false, true}) expect_deep_product_accurate(deep, ldy, accumulate);
    }
  }
}

}  // namespace
}  // namespace attngeom
