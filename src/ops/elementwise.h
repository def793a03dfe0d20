#pragma once
// Row-wise and element-wise ops of the transformer block, all in fp32.
// Each matches the Hugging Face expression named in its comment.
#include <cstdint>
#include <span>
#include <vector>

namespace attngeom {

// MLP activations (HF ACT2FN names: silu, gelu_pytorch_tanh / gelu_new, gelu, relu).
enum class Activation { kSilu, kGeluTanh, kGeluErf, kRelu };

// out[r] = x[r] / sqrt(mean(x[r]^2) + eps) * (offset + weight)     x, out: [rows, dim]
// HF LlamaRMSNorm (offset 0) / GemmaRMSNorm (offset 1), variance accumulated in double.
void rms_norm(const float* x, std::int64_t rows, std::int64_t dim, const float* weight, float offset, float eps,
              float* out);

// out[r] = (x[r] - mean(x[r])) / sqrt(var(x[r]) + eps) * weight + bias     x, out: [rows, dim]
// HF nn.LayerNorm (biased variance); bias may be null. Mean and variance accumulated in double.
void layer_norm(const float* x, std::int64_t rows, std::int64_t dim, const float* weight, const float* bias, float eps,
                float* out);

// Rotary table for positions 0..seq-1: table [seq, 2 * half] holds cos then sin of
// angle = pos * inv_freq[i], as in HF, evaluated in double (HF uses fp32 here; double is the
// exact value it approximates). inv_freq [half] comes from the RoPE type (model/recipe.h).
// scale multiplies cos and sin alike (HF longrope's attention_scaling; 1 otherwise).
void make_rope_table(int seq, std::span<const double> inv_freq, double scale, float* table);

// In place on x [seq, n_heads * head_dim] (row stride n_heads*head_dim), HF rotate_half over the
// first rotary_dim elements of each head: x1' = x1 cos - x2 sin, x2' = x2 cos + x1 sin, with x1, x2
// the two halves of those rotary_dim; the rest of the head passes through (partial rotary,
// HF GPT-NeoX / Phi: cat(rotated(q[..., :rotary_dim]), q[..., rotary_dim:])).
// table [seq, rotary_dim] from make_rope_table; rotary_dim even and <= head_dim.
void apply_rope(float* x, int seq, int n_heads, int head_dim, int rotary_dim, const float* table);

// out[i] = act(gate[i]) * up[i]      (HF: act_fn(gate_proj(x)) * up_proj(x)); out may be gate.
// Vectorised through libmvec expf/tanhf/erff (a few ulp); see vector_math.cc.
void gated_activation(Activation activation, const float* gate, const float* up, float* out, std::int64_t count);

// out[i] = act(x[i])      (HF: act_fn(fc1(x)), a non-gated MLP); out may be x.
void activation(Activation activation, const float* x, float* out, std::int64_t count);

// x[i] += y[i]
void add_in_place(float* x, const float* y, std::int64_t count);

// x[r, j] += bias[j]      x: [rows, cols]   (HF nn.Linear with bias=True)
void add_bias(float* x, std::int64_t rows, std::int64_t cols, const float* bias);

// In place on x[count]: x = cap * tanh(x / cap) (HF Gemma-2 attn_logit_softcapping and
// final_logit_softcapping). Vectorised through libmvec tanhf; see vector_math.cc.
void soft_cap(float* x, std::int64_t count, float cap);

// x[i] *= factor      (HF Granite's residual_multiplier and logits_scaling)
void scale_in_place(float* x, std::int64_t count, float factor);

// In place on x[count]: x = min(max(x, -limit), limit) (HF OLMo, OLMoE and MPT clip_qkv). NaN stays NaN.
void clamp_symmetric(float* x, std::int64_t count, float limit);

// In place on one row of scores: softmax over [0, n). Sums in double. Vectorised through
// glibc's libmvec expf (at most 4 ulp, against 1 for scalar expf); see vector_math.cc.
void softmax_row(float* row, std::int64_t n);

}  // namespace attngeom
