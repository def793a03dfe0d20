// The CUDA backend against the CPU backend, op by op through the seam (ops/backend.h), and
// against scalar references where the two must differ (bf16 products). Skipped where no GPU is
// visible. Tolerances: fp32 element-wise ops agree to a few ulps (the GPU's expf, tanhf and
// erff are within 2 ulps, libmvec's within 4); a K-term fp32 dot product differs by at most
// ~2 K eps sum|a b| between two summation orders.
#include "ops/cuda_backend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "gpu_visible.h"
#include "ops/cpu_backend.h"
#include "ops/cublas_library.h"
#include "ops/gemm.h"
#include "random_values.h"
#include "util/error.h"
#include "util/half.h"

namespace attngeom {
namespace {

using testing::gpu_visible;
using testing::random_vector;

constexpr double kEps = std::numeric_limits<float>::epsilon();
constexpr double kBf16Eps = 1.0 / 256;  // bf16's unit roundoff 2^-8 (8 significand bits)

std::vector<std::uint16_t> to_bf16(const std::vector<float>& v) {
  std::vector<std::uint16_t> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = f32_to_bf16(v[i]);
  return out;
}

// One backend and the host tensors it was given, which its weights may point into.
struct Side {
  std::unique_ptr<Backend> backend;
  // A [rows, cols] buffer holding `values`, filled through the seam (embed of rows 0..rows-1).
  Buffer buffer(const std::vector<float>& values, std::int64_t rows, std::int64_t cols) {
    const Weight table = backend->upload(TensorView{"t", DType::kF32, rows, cols, values.data()});
    std::vector<int> tokens(static_cast<std::size_t>(rows));
    std::iota(tokens.begin(), tokens.end(), 0);
    Buffer out = backend->allocate(rows, cols);
    backend->embed(tokens, table, 1.0f, out);
    return out;
  }
  std::vector<float> host(const Buffer& x) {
    std::vector<float> out(static_cast<std::size_t>(x.numel()));
    backend->copy_to_host(x, out);
    return out;
  }
};

class CudaBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!gpu_visible()) GTEST_SKIP() << "no CUDA GPU is visible";
    cpu.backend = make_cpu_backend(make_fp32_backend());
    gpu.backend = make_cuda_backend({Precision::kFp32, 0, nullptr, score_bytes});
  }
  std::size_t score_bytes = std::size_t{256} << 20;
  Side cpu, gpu;
};

void expect_close(const std::vector<float>& got, const std::vector<float>& want, double relative,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 0;
  for (const float w : want) scale = std::max(scale, static_cast<double>(std::abs(w)));
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], relative * std::max(scale, 1e-30) + 1e-30) << what << " at " << i;
  }
}

TEST_F(CudaBackendTest, EmbedWidensEveryDtypeAndScales) {
  std::mt19937 rng(1);
  const int vocab = 50, cols = 96;
  const std::vector<float> table = random_vector(static_cast<std::size_t>(vocab) * cols, rng);
  const std::vector<std::uint16_t> table_bf16 = to_bf16(table);
  const std::vector<int> tokens = {3, 0, 49, 3, 17};
  for (const DType dtype : {DType::kF32, DType::kBF16}) {
    const void* data = dtype == DType::kF32 ? static_cast<const void*>(table.data()) : table_bf16.data();
    std::vector<float> out[2];
    Side* sides[2] = {&cpu, &gpu};
    for (int s = 0; s < 2; ++s) {
      const Weight w = sides[s]->backend->upload(TensorView{"embed", dtype, vocab, cols, data});
      Buffer x = sides[s]->backend->allocate(static_cast<std::int64_t>(tokens.size()), cols);
      sides[s]->backend->embed(tokens, w, 1.5f, x);
      out[s] = sides[s]->host(x);
    }
    EXPECT_EQ(out[0], out[1]) << dtype_name(dtype);
  }
}

TEST_F(CudaBackendTest, ElementwiseOpsMatchTheCpu) {
  std::mt19937 rng(2);
  const int rows = 33, heads = 4, head_dim = 64, cols = heads * head_dim;
  const std::vector<float> x = random_vector(static_cast<std::size_t>(rows) * cols, rng, 3.0f);
  const std::vector<float> y = random_vector(x.size(), rng);
  const std::vector<float> head_weight = random_vector(head_dim, rng);
  const std::vector<std::uint16_t> row_weight = to_bf16(random_vector(cols, rng));
  const std::vector<float> bias = random_vector(cols, rng);
  std::vector<double> inv_freq(head_dim / 2), partial_inv_freq(head_dim / 8);  // full and quarter rotary
  for (int i = 0; i < head_dim / 2; ++i) inv_freq[static_cast<std::size_t>(i)] = std::pow(10000.0, -2.0 * i / head_dim);
  std::copy_n(inv_freq.begin(), partial_inv_freq.size(), partial_inv_freq.begin());
  const std::vector<int> picked = {32, 0, 7};
  constexpr int kOps = 12;
  std::vector<float> results[2][kOps];
  Side* sides[2] = {&cpu, &gpu};
  for (int s = 0; s < 2; ++s) {
    Side& side = *sides[s];
    Backend& b = *side.backend;
    const Weight hw = b.upload(TensorView{"q_norm", DType::kF32, 1, head_dim, head_weight.data()});
    const Weight rw = b.upload(TensorView{"norm", DType::kBF16, 1, cols, row_weight.data()});
    const Weight bw = b.upload(TensorView{"bias", DType::kF32, 1, cols, bias.data()});
    Buffer a = side.buffer(x, rows, cols);
    b.add_bias(a, bw);
    results[s][0] = side.host(a);
    b.rms_norm(a, head_dim, {&hw, 0.0f, 1e-6f});
    results[s][1] = side.host(a);
    b.rms_norm(a, cols, {&rw, 1.0f, 1e-5f});
    results[s][2] = side.host(a);
    const Buffer table = b.rope_table(rows, inv_freq, 1.0);
    b.rope(a, heads, head_dim, table);
    results[s][3] = side.host(a);
    const Buffer partial = b.rope_table(rows, partial_inv_freq, 1.25);  // longrope-style scaled
    b.rope(a, heads, head_dim, partial);
    results[s][8] = side.host(a);
    b.rms_norm(a, cols, {&rw, 0.0f, 1e-5f, true, &bw});  // LayerNorm with bias
    results[s][9] = side.host(a);
    Buffer c = side.buffer(y, rows, cols);
    const RmsNormSpec post{&rw, 0.0f, 1e-6f};
    b.residual_add(a, c, &post);
    results[s][4] = side.host(a);
    b.soft_cap(a, 2.0f);
    results[s][5] = side.host(a);
    Buffer clamped = side.buffer(results[s][5], rows, cols);
    b.clamp_symmetric(clamped, 1.0f);  // OLMo's clip_qkv
    results[s][10] = side.host(clamped);
    b.scale(clamped, 0.22f);  // Granite's residual_multiplier
    results[s][11] = side.host(clamped);
    Buffer g = b.allocate(static_cast<std::int64_t>(picked.size()), cols);
    b.gather_rows(a, picked, g);
    results[s][6] = side.host(g);
    HostFloats staged = b.host_floats(x.size());  // page-locked on the GPU, as the forward's captures
    ASSERT_EQ(staged.size(), x.size());
    EXPECT_TRUE(std::all_of(staged.data(), staged.data() + staged.size(), [](float v) { return v == 0.0f; }));
    b.heads_to_host(a, heads, head_dim, staged.span());
    results[s][7].assign(staged.data(), staged.data() + staged.size());
    EXPECT_EQ(b.count_nonfinite(a), 0);
  }
  const char* names[] = {"add_bias",
                         "rms_norm per head",
                         "rms_norm (1 + w)",
                         "rope",
                         "residual_add post-norm",
                         "soft_cap",
                         "gather_rows",
                         "heads_to_host",
                         "partial rope, scaled",
                         "layer norm with bias",
                         "clamp_symmetric",
                         "scale"};
  for (int op = 0; op < kOps; ++op) expect_close(results[1][op], results[0][op], 8 * kEps, names[op]);
}

// x[rows[i]] += weights[i] * y[i]: the same two roundings on both sides, so the same floats.
TEST_F(CudaBackendTest, ScatterAddRowsMatchesTheCpu) {
  std::mt19937 rng(9);
  const int x_rows = 40, cols = 300;
  const std::vector<float> x = random_vector(static_cast<std::size_t>(x_rows) * cols, rng);
  const std::vector<int> rows = {39, 2, 17, 0, 21};
  const std::vector<float> y = random_vector(rows.size() * cols, rng);
  const std::vector<float> weights = {0.5f, 0.125f, -2.0f, 0.3f, 0.7f};
  std::vector<float> out[2];
  Side* sides[2] = {&cpu, &gpu};
  for (int s = 0; s < 2; ++s) {
    Buffer a = sides[s]->buffer(x, x_rows, cols);
    const Buffer b = sides[s]->buffer(y, static_cast<std::int64_t>(rows.size()), cols);
    sides[s]->backend->scatter_add_rows(a, rows, b, weights);
    out[s] = sides[s]->host(a);
  }
  EXPECT_EQ(out[0], out[1]);
}

TEST_F(CudaBackendTest, CountsNonFiniteValues) {
  std::vector<float> x(1000, 1.0f);
  x[3] = std::numeric_limits<float>::infinity();
  x[999] = std::numeric_limits<float>::quiet_NaN();
  const Buffer a = gpu.buffer(x, 10, 100);
  EXPECT_EQ(gpu.backend->count_nonfinite(a), 2);
}

// y = x W^T for every LinearSource kind and weight dtype, fp32 products.
TEST_F(CudaBackendTest, LinearMatchesTheCpuInFp32) {
  std::mt19937 rng(3);
  const int rows = 45, in = 200, out = 130;
  const std::vector<float> x = random_vector(static_cast<std::size_t>(rows) * in, rng);
  const std::vector<float> up = random_vector(x.size(), rng);
  const std::vector<float> w = random_vector(static_cast<std::size_t>(out) * in, rng, 0.1f);
  const std::vector<std::uint16_t> w_bf16 = to_bf16(w);
  const std::vector<float> norm = random_vector(in, rng);
  for (const DType dtype : {DType::kF32, DType::kBF16}) {
    for (int kind = 0; kind < 8;
         ++kind) {  // stored, normed, gated silu / gelu tanh / gelu erf, plain gelu, LayerNorm, plain relu
      std::vector<float> y[2];
      Side* sides[2] = {&cpu, &gpu};
      for (int s = 0; s < 2; ++s) {
        Backend& b = *sides[s]->backend;
        const void* wd = dtype == DType::kF32 ? static_cast<const void*>(w.data()) : w_bf16.data();
        const Weight weight = b.upload(TensorView{"w", dtype, out, in, wd});
        const Weight nw = b.upload(TensorView{"n", DType::kF32, 1, in, norm.data()});
        Buffer a = sides[s]->buffer(x, rows, in);
        Buffer u = sides[s]->buffer(up, rows, in);
        Buffer result = b.allocate(rows, out);
        const LinearTarget target{&weight, &result};
        const LinearSource source = kind == 0   ? stored(a)
                                    : kind == 1 ? normed(a, {&nw, 0.0f, 1e-6f})
                                    : kind == 5 ? activated(a, Activation::kGeluTanh)
                                    : kind == 6 ? normed(a, {&nw, 0.0f, 1e-5f, true, &nw})
                                    : kind == 7 ? activated(a, Activation::kRelu)
                                                : gated(a, u, static_cast<Activation>(kind - 2));
        b.linear(source, {&target, 1});
        y[s] = sides[s]->host(result);
      }
      expect_close(y[1], y[0], 4 * in * kEps,
                   "linear kind " + std::to_string(kind) + " " + std::string(dtype_name(dtype)));
    }
  }
}

// bf16 products: x and W rounded to bf16, accumulated in fp32; against the same rounding
// accumulated in double.
TEST_F(CudaBackendTest, LinearInBf16IsTheRoundedProduct) {
  std::mt19937 rng(4);
  const int rows = 20, in = 256, out = 64;
  const std::vector<float> x = random_vector(static_cast<std::size_t>(rows) * in, rng);
  const std::vector<float> w = random_vector(static_cast<std::size_t>(out) * in, rng, 0.1f);
  auto bf16 = make_cuda_backend({Precision::kBf16, 0, nullptr, score_bytes});
  Side side{std::move(bf16)};
  const Weight weight = side.backend->upload(TensorView{"w", DType::kF32, out, in, w.data()});
  Buffer a = side.buffer(x, rows, in);
  Buffer result = side.backend->allocate(rows, out);
  const LinearTarget target{&weight, &result};
  side.backend->linear(stored(a), {&target, 1});
  const std::vector<float> y = side.host(result);
  for (int r = 0; r < rows; ++r) {
    for (int o = 0; o < out; ++o) {
      double exact = 0, magnitude = 0;
      for (int k = 0; k < in; ++k) {
        const double term = static_cast<double>(bf16_to_f32(f32_to_bf16(x[static_cast<std::size_t>(r * in + k)]))) *
                            bf16_to_f32(f32_to_bf16(w[static_cast<std::size_t>(o * in + k)]));
        exact += term;
        magnitude += std::abs(term);
      }
      ASSERT_NEAR(y[static_cast<std::size_t>(r * out + o)], exact, 2 * in * kEps * magnitude) << r << "," << o;
    }
  }
}

// A bf16 backend's fp32 products (a router checked against fp32) are the fp32 path's; the
// leading rows of a buffer are its memory, and fill_zero clears them on the device.
TEST_F(CudaBackendTest, Fp32ProductsBesideBf16AndLeadingRows) {
  std::mt19937 rng(6);
  const int rows = 33, in = 96, out = 8;
  const std::vector<float> x = random_vector(static_cast<std::size_t>(rows) * in, rng);
  const std::vector<float> w = random_vector(static_cast<std::size_t>(out) * in, rng, 0.1f);
  const std::vector<std::uint16_t> w_bf16 = to_bf16(w);
  Side bf16{make_cuda_backend({Precision::kBf16, 0, nullptr, score_bytes})};
  std::vector<float> y[2];
  Side* sides[2] = {&cpu, &bf16};
  for (int s = 0; s < 2; ++s) {
    Backend& b = *sides[s]->backend;
    const Weight weight = b.upload(TensorView{"w", DType::kBF16, out, in, w_bf16.data()});
    Buffer a = sides[s]->buffer(x, rows, in);
    Buffer result = b.allocate(rows, out);
    const LinearTarget target{&weight, &result};
    b.linear_fp32(stored(a), {&target, 1});
    y[s] = sides[s]->host(result);
  }
  expect_close(y[1], y[0], 4 * in * kEps, "linear_fp32 beside bf16");
  Buffer a = bf16.buffer(x, rows, in);
  Buffer head = a.leading_rows(5);
  bf16.backend->fill_zero(head);
  const std::vector<float> cleared = bf16.host(a);
  for (std::size_t i = 0; i < cleared.size(); ++i) ASSERT_EQ(cleared[i], i < 5u * in ? 0.0f : x[i]) << i;
}

struct AttentionCase {
  std::string name;
  AttentionShape shape;
  std::vector<int> topn;     // per head, or empty
  std::vector<float> gates;  // per head, or empty
  std::vector<int> capture;
  int zero_query_rows = 0;  // q = 0 on the first rows: uniform probabilities, every key tied
};

struct AttentionInputs {
  std::vector<float> q, k, v;  // [seq, heads * head_dim], [seq, kv_heads * head_dim] twice
};

AttentionInputs random_inputs(const AttentionCase& c, unsigned seed) {
  std::mt19937 rng(seed);
  const AttentionShape& s = c.shape;
  AttentionInputs in;
  in.q = random_vector(static_cast<std::size_t>(s.seq) * s.heads * s.head_dim, rng);
  std::fill(in.q.begin(), in.q.begin() + static_cast<std::ptrdiff_t>(c.zero_query_rows) * s.heads * s.head_dim, 0.0f);
  in.k = random_vector(static_cast<std::size_t>(s.seq) * s.kv_heads * s.head_dim, rng);
  in.v = random_vector(in.k.size(), rng);
  if (!c.topn.empty()) {
    // Multiples of 1/8 in [-2, 2]: every product and sum of a score is exact in fp32 on both
    // sides, so both keep the same top N (ties included) where rounding would flip near-ties.
    for (std::vector<float>* x : {&in.q, &in.k}) {
      for (float& e : *x) e = std::clamp(std::round(e * 8.0f), -16.0f, 16.0f) / 8.0f;
    }
  }
  return in;
}

// The outputs and the captured rows of one backend for one case.
void run_attention(Side& side, const AttentionCase& c, const AttentionInputs& in, std::vector<float>& out,
                   std::vector<float>& captured) {
  const std::vector<float>&q = in.q, &k = in.k, &v = in.v;
  const AttentionShape& s = c.shape;
  Buffer qb = side.buffer(q, s.seq, static_cast<std::int64_t>(s.heads) * s.head_dim);
  Buffer kb = side.buffer(k, s.seq, static_cast<std::int64_t>(s.kv_heads) * s.head_dim);
  Buffer vb = side.buffer(v, s.seq, static_cast<std::int64_t>(s.kv_heads) * s.head_dim);
  Buffer ob = side.backend->allocate(s.seq, static_cast<std::int64_t>(s.heads) * s.head_dim);
  AttentionCall call;
  call.shape = s;
  call.q = &qb;
  call.k = &kb;
  call.v = &vb;
  call.out = &ob;
  call.head_topn = c.topn;
  call.head_gates = c.gates;
  call.capture_rows = c.capture;
  const std::size_t per_head = c.capture.size() * static_cast<std::size_t>(s.seq);
  captured.assign(static_cast<std::size_t>(s.heads) * per_head, -1.0f);
  side.backend->attention(call, [&](const AttentionRows& rows) {
    ASSERT_EQ(rows.space, MemorySpace::kHost);
    std::copy_n(rows.probs, static_cast<std::size_t>(rows.heads()) * per_head,
                captured.begin() + static_cast<std::ptrdiff_t>(rows.head_begin * per_head));
  });
  out = side.host(ob);
}

// ALiBi slopes of 8 heads (BLOOM's and MPT's rule: 2^(-h - 1)).
const std::vector<float> kAlibiSlopes = {0.5f, 0.25f, 0.125f, 0.0625f, 0.03125f, 0.015625f, 0.0078125f, 0.00390625f};

std::vector<AttentionCase> attention_cases() {
  const AttentionShape base{300, 8, 2, 64, 0, 0.125f, 0};
  std::vector<AttentionCase> cases;
  cases.push_back({"causal gqa", base, {}, {}, {0, 1, 150, 299}, 0});
  AttentionShape window = base;
  window.window = 37;
  cases.push_back({"sliding window", window, {}, {}, {0, 36, 37, 200, 299}, 0});
  AttentionShape capped = base;
  capped.softcap = 5.0f;
  capped.scale = 1.0f;
  cases.push_back({"soft-cap", capped, {}, {}, {10, 299}, 0});
  cases.push_back({"top-n with ties, gates",
                   base,
                   {0, 1, 2, 5, 16, 64, 299, 1000},
                   {1.0f, 0.0f, 0.5f, 1.0f, 2.0f, 1.0f, 1.0f, 0.25f},
                   {0, 3, 40, 41, 299},
                   41});
  AttentionShape mha = base;
  mha.kv_heads = 8;
  mha.window = 50;
  cases.push_back({"multi-head, window, top-n", mha, {3, 0, 7, 1, 0, 2, 9, 4}, {}, {5, 250}, 0});
  AttentionShape alibi = mha;
  alibi.window = 0;
  alibi.alibi_slopes = kAlibiSlopes;
  cases.push_back({"alibi", alibi, {}, {}, {0, 150, 299}, 0});
  alibi.alibi_before_scale = true;
  cases.push_back({"falcon-rw alibi", alibi, {}, {}, {0, 299}, 0});
  return cases;
}

TEST_F(CudaBackendTest, AttentionMatchesTheCpuInFp32) {
  // One query block; many (4 rows each); many and a shorter last (7 rows each, 300 = 42 x 7 + 6).
  for (const std::size_t budget : {std::size_t{256} << 20, std::size_t{40000}, std::size_t{70000}}) {
    auto small = make_cuda_backend({Precision::kFp32, 0, nullptr, budget});
    Side gpu_side{std::move(small)};
    for (const AttentionCase& c : attention_cases()) {
      const AttentionShape& s = c.shape;
      const AttentionInputs in = random_inputs(c, 5);
      std::vector<float> out[2], captured[2];
      run_attention(cpu, c, in, out[0], captured[0]);
      run_attention(gpu_side, c, in, out[1], captured[1]);
      const std::string what = c.name + " (score budget " + std::to_string(budget) + ")";
      // Probabilities: a score's error (~2 head_dim eps |q||k| scale) moves p by about p times it.
      expect_close(captured[1], captured[0], 64 * s.head_dim * kEps, what + ": captured rows");
      expect_close(out[1], out[0], 64 * s.head_dim * kEps, what + ": outputs");
      for (std::size_t i = 0; i < captured[0].size(); ++i) {  // masked keys and dropped keys are exact zeros
        if (captured[0][i] == 0.0f) {
          ASSERT_EQ(captured[1][i], 0.0f) << what << " at " << i;
        }
      }
    }
  }
}

TEST_F(CudaBackendTest, AttentionInBf16MatchesTheCpusBf16) {
  if (!cpu_has_bf16_matmul()) GTEST_SKIP() << "this CPU has no bf16 matmul to compare with";
  Side cpu_bf16{make_cpu_backend(make_bf16_backend())};
  Side gpu_bf16{make_cuda_backend({Precision::kBf16, 0, nullptr, std::size_t{40000}})};
  for (const AttentionCase& c : attention_cases()) {
    const AttentionShape& s = c.shape;
    const AttentionInputs in = random_inputs(c, 6);
    std::vector<float> out[2], captured[2];
    run_attention(cpu_bf16, c, in, out[0], captured[0]);
    run_attention(gpu_bf16, c, in, out[1], captured[1]);
    // Same bf16 roundings of q, k and v: the scores differ only in summation order; a
    // probability that lands on the other side of a bf16 rounding moves one output term by
    // p * 2^-8 * |v|.
    expect_close(captured[1], captured[0], 64 * s.head_dim * kEps, c.name + ": captured rows (bf16)");
    expect_close(out[1], out[0], 4 * kBf16Eps, c.name + ": outputs (bf16)");
  }
}

// The fused bf16 kernel against the blocks, which take the same bf16 products whole. Each side
// rounds each weight once to bf16 (the fused kernel exp(s - max) before dividing by the sum,
// the blocks the probability), each within 2^-8 p of the exact weight, so the two differ by at
// most 2^-7 p and an output by at most 2^-7 max|v|, beside the fp32 sums' order. Captured rows
// come from the same softmax kernel, on products of the gathered queries.
TEST_F(CudaBackendTest, FusedAttentionMatchesTheBlocksInBf16) {
  Side fused{make_cuda_backend({Precision::kBf16, 0, nullptr, std::size_t{40000}, true})};
  Side blocks{make_cuda_backend({Precision::kBf16, 0, nullptr, std::size_t{256} << 20, false})};
  std::size_t differing = 0;  // outputs of the longest sequences that are not the blocks' bit for bit
  for (const int head_dim : {16, 64, 80, 96, 128, 256}) {
    for (const int kv_heads : {2, 8}) {
      if (kv_heads == 8 && head_dim != 64) continue;
      for (const int seq : {1, 100, 1000}) {
        for (const int window : {0, 37, 100}) {
          const AttentionShape shape{seq, 8, kv_heads, head_dim, window, 1.0f / std::sqrt(float(head_dim)), 0};
          AttentionCase c{"fused", shape, {}, {}, {}, 0};
          if (head_dim == 80) c.shape.softcap = 3.0f;
          if (head_dim == 96 || head_dim == 128) c.shape.alibi_slopes = kAlibiSlopes;
          c.shape.alibi_before_scale = head_dim == 128;
          c.capture = seq > 5 ? std::vector<int>{0, 5, seq - 1} : std::vector<int>{seq - 1};
          const AttentionInputs in = random_inputs(c, static_cast<unsigned>(seq + head_dim + window));
          std::vector<float> out[2], captured[2];
          run_attention(blocks, c, in, out[0], captured[0]);
          run_attention(fused, c, in, out[1], captured[1]);
          const std::string what = "head_dim " + std::to_string(head_dim) + ", kv heads " + std::to_string(kv_heads) +
                                   ", seq " + std::to_string(seq) + ", window " + std::to_string(window);
          double largest_v = 0;
          for (const float x : in.v) largest_v = std::max(largest_v, static_cast<double>(std::abs(x)));
          for (std::size_t i = 0; i < out[0].size(); ++i) {
            ASSERT_NEAR(out[1][i], out[0][i], 2 * kBf16Eps * largest_v) << what << ": output " << i;
            if (seq == 1000 && out[1][i] != out[0][i]) ++differing;
          }
          expect_close(captured[1], captured[0], 64 * head_dim * kEps, what + ": captured rows");
          for (std::size_t i = 0; i < captured[0].size(); ++i) {
            if (captured[0][i] == 0.0f) {
              ASSERT_EQ(captured[1][i], 0.0f) << what << " at " << i;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(differing, 0u) << "the fused kernel did not run: every output is the blocks' own";
}

// Needs no GPU: cuBLAS is opened at run time, and each entry point must resolve.
TEST(CublasLibrary, OpensWithEveryEntryPoint) {
  const CublasLibrary& library = cublas_library();
  EXPECT_NE(library.gemm_strided_batched_ex, nullptr);
  EXPECT_FALSE(std::string(library.status_string(CUBLAS_STATUS_NOT_INITIALIZED)).empty());
}

TEST(CudaDevices, NamesAMissingGpuByItsSetting) {
  std::string why;
  const int count = cuda_device_count(why);
  try {
    cuda_device_info(count);  // one past the last
    FAIL() << "no error for GPU " << count;
  } catch (const SettingError& e) {
    EXPECT_NE(std::string(e.what()).find("device"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace attngeom
