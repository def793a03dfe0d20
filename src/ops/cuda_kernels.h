#pragma once
// The CUDA kernels of the compute seam behind a plain C++17 interface: nvcc compiles their
// definitions (cuda_kernels.cu, cuda_attention.cu); ops/cuda_backend.cc drives them. Every
// pointer is device memory; every call is an asynchronous launch on `stream` that returns its
// launch error (cudaGetLastError); each kernel
// computes what the CPU's counterpart in ops/elementwise.h or ops/attention.cc computes, in fp32
// (sums of squares and softmax sums in double, as there).
#include <cuda_runtime_api.h>

#include <cstdint>

namespace attngeom::cuda {

// A stored tensor's element type (util/half.h DType's floating types).
enum class Stored : int { kF32, kF16, kBF16 };

// dst[i] = float(src[i])
cudaError_t widen(Stored type, const void* src, float* dst, std::int64_t count, cudaStream_t stream);
// dst[i] = bf16(float(src[i])), round to nearest even (util/half.h f32_to_bf16)
cudaError_t to_bf16(Stored type, const void* src, std::uint16_t* dst, std::int64_t count, cudaStream_t stream);

// x[i] = table[tokens[i]] * scale                           x: [count, cols]
cudaError_t embed(const int* tokens, int count, Stored type, const void* table, std::int64_t cols, float scale,
                  float* x, cudaStream_t stream);
// y[r, j] += bias[j]                                        y: [rows, cols]
cudaError_t add_bias(float* y, std::int64_t rows, std::int64_t cols, Stored type, const void* bias,
                     cudaStream_t stream);
// A norm of each row of x [rows, width] into out (out may be x), as ops/elementwise.h's:
// RMSNorm, x / sqrt(mean(x^2) + eps) * (offset + weight); or, `centered`, LayerNorm,
// (x - mean) / sqrt(var + eps) * weight + bias (bias null: none; offset unused).
struct NormSpec {
  Stored weight_type = Stored::kF32;
  const void* weight = nullptr;
  Stored bias_type = Stored::kF32;
  const void* bias = nullptr;
  float offset = 0;
  float eps = 0;
  bool centered = false;
};
cudaError_t rms_norm(const float* x, float* out, std::int64_t rows, std::int64_t width, const NormSpec& norm,
                     cudaStream_t stream);
// HF rotate_half on the first rotary_dim elements of each head of x [seq, heads * head_dim]
// with table [seq, rotary_dim] (cos | sin); the rest of each head passes through
cudaError_t rope(float* x, int seq, int heads, int head_dim, int rotary_dim, const float* table, cudaStream_t stream);
// out[i] = act(gate[i]) * up[i] (up null: times 1); activation as ops/elementwise.h Activation
// (silu, gelu tanh, gelu erf, relu)
cudaError_t gated_activation(int activation, const float* gate, const float* up, float* out, std::int64_t count,
                             cudaStream_t stream);
// x[i] += y[i]
cudaError_t add_in_place(float* x, const float* y, std::int64_t count, cudaStream_t stream);
// x[i] = cap * tanh(x[i] / cap)
cudaError_t soft_cap(float* x, std::int64_t count, float cap, cudaStream_t stream);
// x[i] *= factor
cudaError_t scale(float* x, std::int64_t count, float factor, cudaStream_t stream);
// x[i] = min(max(x[i], -limit), limit)
cudaError_t clamp_symmetric(float* x, std::int64_t count, float limit, cudaStream_t stream);
// *counter = how many x[i] are NaN or infinite
cudaError_t count_nonfinite(const float* x, std::int64_t count, unsigned long long* counter, cudaStream_t stream);
// out[i] = x[rows[i]]                                       x: [*, cols], out: [count, cols]
cudaError_t gather_rows(const float* x, std::int64_t cols, const int* rows, int count, float* out, cudaStream_t stream);
// x[rows[i]] += weights[i] * y[i], rows distinct              x: [*, cols], y: [count, cols]
cudaError_t scatter_add_rows(float* x, std::int64_t cols, const int* rows, int count, const float* y,
                             const float* weights, cudaStream_t stream);
// x [seq, heads * head_dim] -> out [heads, seq, head_dim]
cudaError_t heads_major(const float* x, int seq, int heads, int head_dim, float* out, cudaStream_t stream);
// out[:, h] *= gates[h] for every head                       out: [seq, heads * head_dim]
cudaError_t scale_heads(float* out, int seq, int heads, int head_dim, const float* gates, cudaStream_t stream);

// One query block's rows of the heads [head_begin, head_begin + heads) after their scores:
// in place on scores [heads, rows, keys] (query r0 + i, or queries[i], against key key0 + j,
// already scaled), the ALiBi bias and the soft-cap when set, the causal and window mask, softmax, then each
// head's top-N keys when topn[head] > 0 (ops/attention.h keep_top_n). Masked keys become
// exact zeros.
struct SoftmaxBlock {
  float* scores = nullptr;
  int heads = 0;
  int head_begin = 0;
  int rows = 0;
  int keys = 0;
  int r0 = 0;
  int key0 = 0;
  int window = 0;
  float softcap = 0;
  const float* alibi_slopes = nullptr;  // [all heads] ALiBi slopes (ops/attention_tiles.h alibi_bias), or null
  bool alibi_before_scale = false;
  float scale = 1;            // the scores' scale, for alibi_before_scale
  const int* topn = nullptr;  // [all heads] or null
  // Captured rows: capture_index[query] = its row among the captured, or -1 ([seq], or null);
  // captured [heads, captured_rows, seq] receives them whole.
  const int* capture_index = nullptr;
  float* captured = nullptr;
  int captured_rows = 0;
  int seq = 0;
  // The block's query rows when they are not r0 + i: queries[i] (ascending), or null.
  const int* queries = nullptr;
  std::uint16_t* probs_bf16 = nullptr;  // [heads, rows, keys]: the probabilities rounded to bf16, or null
};
cudaError_t attention_softmax(const SoftmaxBlock& block, cudaStream_t stream);

// Attention of every query row in bf16 without keeping its scores (cuda_fused_attention.cu):
// out[i, h] = sum_j p(i, j) v[j, kv(h)] with the causal and window mask, the ALiBi bias and the
// soft-cap as in SoftmaxBlock, scores from bf16 products with fp32 sums, a running softmax
// (ops/attention_tiles.h) whose weights are rounded to bf16 for their products with v.
// Where ops/attention_tiles.h fused_attention_fits; no top-N.
struct FusedAttention {
  const std::uint16_t* q = nullptr;  // [seq, heads * head_dim] bf16 bits
  const std::uint16_t* k = nullptr;  // [seq, kv_heads * head_dim] bf16 bits
  const std::uint16_t* v = nullptr;  // [seq, kv_heads * head_dim] bf16 bits
  float* out = nullptr;              // [seq, heads * head_dim]
  int seq = 0;
  int heads = 0;
  int kv_heads = 0;
  int head_dim = 0;
  int window = 0;
  float scale = 1;
  float softcap = 0;
  const float* alibi_slopes = nullptr;  // [heads] or null
  bool alibi_before_scale = false;
};
cudaError_t fused_attention(const FusedAttention& attention, cudaStream_t stream);
// Lets the fused kernel ask for up to `shared_limit` bytes of shared memory per block on the
// current GPU (its opt-in limit): once per GPU, before the first fused_attention.
cudaError_t allow_fused_attention(std::size_t shared_limit);

}  // namespace attngeom::cuda
