// Fast ops against naive scalar references. Tolerances come from fp32 rounding:
// a K-term dot product has error at most ~K * eps * sum|a_k b_k| (Higham's gamma_K).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "ops/attention.h"
#include "ops/bf16_matmul.h"
#include "ops/cpu_backend.h"
#include "ops/elementwise.h"
#include "ops/gemm.h"

namespace attngeom {
namespace {

constexpr double kEps = std::numeric_limits<float>::epsilon();

std::vector<float> random_vector(std::size_t n, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

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
  for (const Activation act : {Activation::kSilu, Activation::kGeluTanh, Activation::kGeluErf}) {
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
  for (const Activation act : {Activation::kSilu, Activation::kGeluTanh, Activation::kGeluErf}) {
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
      const double function_error = act == Activation::kSilu ? 0.0 : 8 * kEps * 0.5 * std::abs(x * u[i]);
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

// Naive attention for one head: full score row, mask, softmax, weighted sum, in double.
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
        row[j] = dot * s.scale;
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

class AttentionTest : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(AttentionTest, MatchesNaiveProbabilitiesOutputsAndCapturedRows) {
  const auto [window, kv_heads] = GetParam();
  AttentionShape s{150, 4, kv_heads, 16, window, 0.0f};
  s.scale = 1.0f / std::sqrt(16.0f);
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

INSTANTIATE_TEST_SUITE_P(WindowsAndGqa, AttentionTest,
                         ::testing::Values(std::make_tuple(0, 4), std::make_tuple(0, 2), std::make_tuple(40, 1),
                                           std::make_tuple(64, 2), std::make_tuple(200, 4)));

}  // namespace
}  // namespace attngeom
