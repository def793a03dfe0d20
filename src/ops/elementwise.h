#pragma once
// Row-wise and element-wise ops of the transformer block, all in fp32.
// Each matches the Hugging Face expression named in its comment.
#include <cstdint>
#include <span>
#include <vector>

namespace attngeom {

// Gated MLP activations (HF ACT2FN names: silu, gelu_pytorch_tanh, gelu).
enum class Activation { kSilu, kGeluTanh, kGeluErf };

// out[r] = x[r] / sqrt(mean(x[r]^2) + eps) * (offset + weight)     x, out: [rows, dim]
// HF LlamaRMSNorm (offset 0) / GemmaRMSNorm (offset 1), variance accumulated in double.
void rms_norm(const float* x, std::int64_t rows, std::int64_t dim, const float* weight, float offset, float eps,
              float* out);

// Rotary tables for positions 0..seq-1: cos, sin [seq, head_dim/2], with
// inv_freq = 1 / theta^(2i/d) and angle = pos * inv_freq as in HF, evaluated in double
// (HF uses fp32 here; double is the exact value it approximates).
struct RopeTables {
  std::vector<float> cos;
  std::vector<float> sin;
  int half_dim = 0;
};
void make_rope_tables(int seq, int head_dim, float theta, RopeTables& tables);

// In place on x [seq, n_heads * head_dim] (row stride n_heads*head_dim), HF rotate_half:
// x1' = x1 cos - x2 sin, x2' = x2 cos + x1 sin, with x1, x2 the two halves of a head.
void apply_rope(float* x, int seq, int n_heads, int head_dim, const RopeTables& tables);

// out[i] = act(gate[i]) * up[i]      (HF: act_fn(gate_proj(x)) * up_proj(x)); out may be gate.
// Vectorised through libmvec expf/tanhf/erff (a few ulp); see vector_math.cc.
void gated_activation(Activation activation, const float* gate, const float* up, float* out, std::int64_t count);

// x[i] += y[i]
void add_in_place(float* x, const float* y, std::int64_t count);

// In place on one row of scores: softmax over [0, n). Sums in double. Vectorised through
// glibc's libmvec expf (at most 4 ulp, against 1 for scalar expf); see vector_math.cc.
void softmax_row(float* row, std::int64_t n);

}  // namespace attngeom
