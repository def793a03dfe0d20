#include "model/forward.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include "util/error.h"
#include "util/half.h"

namespace attngeom {
namespace {

// Finite weights can still overflow float32 activations (e.g. a checkpoint scaled by 1e25);
// NaN would then flow silently into every metric, so each layer's attention output and
// residual stream are checked (two scans, negligible next to the products that made them).
void check_finite(const std::vector<float>& x, std::size_t count, const std::string& what) {
  if (count_nonfinite(DType::kF32, x.data(), count).count == 0) return;
  throw InputError(what +
                   " overflow float32 (non-finite values); the checkpoint's weights (or head gates) are finite "
                   "but out of range");
}

std::string in_layer(int layer, const char* what) { return "model.layers." + std::to_string(layer) + ": " + what; }

}  // namespace

void ForwardScratch::resize(const ModelConfig& c, int new_seq) {
  if (new_seq == seq) return;
  seq = new_seq;
  const auto t = static_cast<std::size_t>(new_seq);
  x.resize(t * c.hidden);
  normed.resize(t * c.hidden);
  q.resize(t * c.q_dim());
  k.resize(t * c.kv_dim());
  v.resize(t * c.kv_dim());
  attn_out.resize(t * c.q_dim());
  proj.resize(t * c.hidden);
  gate.resize(t * c.intermediate);
  up.resize(t * c.intermediate);
  values.resize(t * c.kv_dim());
  widened.resize(static_cast<std::size_t>(std::max(c.hidden, c.q_dim())));
  ropes.resize(c.recipe.ropes.size());
  for (std::size_t i = 0; i < ropes.size(); ++i) {
    make_rope_tables(new_seq, rope_inv_freq(c.recipe.ropes[i], c.head_dim), ropes[i]);
  }
}

Transformer::Transformer(const ModelConfig& config, const Weights& weights, LinearBackend& backend)
    : config_(config), weights_(weights), backend_(backend) {}

const float* Transformer::widen(const TensorView& vector) {
  widen_to_f32(vector.dtype, vector.data, s_.widened.data(), static_cast<std::size_t>(vector.numel()));
  return s_.widened.data();
}

// rms_norm(x) with `norm`, as a linear layers' input: produced block by block where the
// backend converts it (its fp32 home is s_.normed). Without a norm (OLMo-2), x as stored.
LinearInput Transformer::layer_input(const TensorView& norm) {
  const std::int64_t hidden = config_.hidden;
  if (!present(norm)) return {s_.seq, hidden, s_.x.data(), {}, nullptr};
  const float* scale = widen(norm);
  return {s_.seq, hidden, nullptr,
          [this, scale, hidden](std::int64_t begin, std::int64_t end, float* out) {
            rms_norm(s_.x.data() + begin * hidden, end - begin, hidden, scale, config_.recipe.norm_weight_offset,
                     config_.rms_norm_eps, out);
          },
          s_.normed.data()};
}

void Transformer::add_bias_if_present(float* y, const TensorView& bias) {
  if (present(bias)) add_bias(y, s_.seq, bias.numel(), widen(bias));
}

void Transformer::norm_rows(float* y, std::int64_t rows, std::int64_t width, const TensorView& norm) {
  rms_norm(y, rows, width, widen(norm), config_.recipe.norm_weight_offset, config_.rms_norm_eps, y);
}

// HF: inputs_embeds = embed_tokens(input_ids) (* sqrt(hidden) for the Gemmas)
void Transformer::embed(std::span<const int> tokens) {
  const int hidden = config_.hidden;
  const float scale = config_.recipe.embedding_scale;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    ATTNGEOM_CHECK(tokens[i] >= 0 && tokens[i] < config_.vocab);
    float* row = s_.x.data() + i * hidden;
    widen_to_f32(weights_.embed.dtype, weights_.embed.row(tokens[i]), row, static_cast<std::size_t>(hidden));
    if (scale != 1.0f) {
      for (int j = 0; j < hidden; ++j) row[j] *= scale;
    }
  }
}

// ComputeQKV: s_.q [seq, heads*head_dim], s_.k [seq, kv_heads*head_dim] normed and rotated;
// s_.v [seq, kv_heads*head_dim] (captured as values before anything but its bias touches it).
void Transformer::attention_input(int l, bool captured) {
  const ModelConfig& c = config_;
  const ModelRecipe& r = c.recipe;
  const LayerWeights& w = weights_.layers[static_cast<std::size_t>(l)];
  const int seq = s_.seq;
  // HF: h = input_layernorm(x) (OLMo-2: h = x); q, k, v = q_proj(h), k_proj(h), v_proj(h) (+ biases)
  const LinearOutput qkv[] = {{&w.q_proj, s_.q.data()}, {&w.k_proj, s_.k.data()}, {&w.v_proj, s_.v.data()}};
  backend_.linear_products(layer_input(w.attn_input_norm), qkv);
  add_bias_if_present(s_.q.data(), w.q_bias);
  add_bias_if_present(s_.k.data(), w.k_bias);
  add_bias_if_present(s_.v.data(), w.v_bias);
  if (captured) {
    // values [kv_heads, seq, head_dim] from v [seq, kv_heads, head_dim]; RoPE never touches values.
    // A strided copy of T x kv_dim floats per layer: on every thread, as the products are.
#pragma omp parallel for schedule(static)
    for (int g = 0; g < c.kv_heads; ++g) {
      for (int i = 0; i < seq; ++i) {
        std::copy_n(s_.v.data() + (static_cast<std::size_t>(i) * c.kv_heads + g) * c.head_dim, c.head_dim,
                    s_.values.data() + (static_cast<std::size_t>(g) * seq + i) * c.head_dim);
      }
    }
  }
  // HF Qwen3 / Gemma-3: q = q_norm(q.view(seq, heads, head_dim)), per head;
  // HF OLMo-2: q = q_norm(q_proj(h)) over all heads at once. Likewise k.
  if (r.qk_norm == QkNorm::kPerHead) {
    norm_rows(s_.q.data(), static_cast<std::int64_t>(seq) * c.heads, c.head_dim, w.q_norm);
    norm_rows(s_.k.data(), static_cast<std::int64_t>(seq) * c.kv_heads, c.head_dim, w.k_norm);
  } else if (r.qk_norm == QkNorm::kWholeProjection) {
    norm_rows(s_.q.data(), seq, c.q_dim(), w.q_norm);
    norm_rows(s_.k.data(), seq, c.kv_dim(), w.k_norm);
  }
  // HF: q, k = apply_rotary_pos_emb(q, k, cos, sin), with this layer's table
  const RopeTables& rope = s_.ropes[static_cast<std::size_t>(r.layers[static_cast<std::size_t>(l)].rope_table)];
  apply_rope(s_.q.data(), seq, c.heads, c.head_dim, rope);
  apply_rope(s_.k.data(), seq, c.kv_heads, c.head_dim, rope);
}

// OutputProjection. HF: x = x + o_proj(attn_output) (Gemma-2/3, OLMo-2: + post_attention_layernorm(...))
void Transformer::output_projection(int l) {
  const LayerWeights& w = weights_.layers[static_cast<std::size_t>(l)];
  const int seq = s_.seq;
  backend_.linear(s_.attn_out.data(), seq, w.o_proj, s_.proj.data());  // [seq, hidden]
  add_bias_if_present(s_.proj.data(), w.o_bias);
  if (present(w.attn_output_norm)) norm_rows(s_.proj.data(), seq, config_.hidden, w.attn_output_norm);
  add_in_place(s_.x.data(), s_.proj.data(), static_cast<std::int64_t>(seq) * config_.hidden);
}

// Mlp. HF: x = x + down_proj(act(gate_proj(h)) * up_proj(h)), h = the MLP's input norm of x
// (LLaMA: post_attention_layernorm; Gemma-2/3: pre_feedforward_layernorm; OLMo-2: h = x);
// Gemma-2/3 and OLMo-2 norm the MLP's output too (post_feedforward_layernorm).
void Transformer::mlp(int l) {
  const ModelConfig& c = config_;
  const LayerWeights& w = weights_.layers[static_cast<std::size_t>(l)];
  const int seq = s_.seq;
  const LinearOutput gate_up[] = {{&w.gate_proj, s_.gate.data()}, {&w.up_proj, s_.up.data()}};  // [seq, intermediate]
  backend_.linear_products(layer_input(w.mlp_input_norm), gate_up);
  const std::int64_t intermediate = c.intermediate;
  const LinearInput activated{seq, intermediate, nullptr,
                              [&](std::int64_t begin, std::int64_t end, float* out) {
                                gated_activation(c.recipe.activation, s_.gate.data() + begin * intermediate,
                                                 s_.up.data() + begin * intermediate, out,
                                                 (end - begin) * intermediate);
                              },
                              s_.gate.data()};
  const LinearOutput down{&w.down_proj, s_.proj.data()};  // [seq, hidden]
  backend_.linear_products(activated, {&down, 1});
  if (present(w.mlp_output_norm)) norm_rows(s_.proj.data(), seq, c.hidden, w.mlp_output_norm);
  add_in_place(s_.x.data(), s_.proj.data(), static_cast<std::int64_t>(seq) * c.hidden);
}

void Transformer::layer(int l, const ForwardRequest& request, ForwardObserver* observer, bool update_residual) {
  const ModelConfig& c = config_;
  const ModelRecipe& r = c.recipe;
  const int seq = s_.seq;
  const bool captured =
      observer != nullptr && std::binary_search(request.capture_layers.begin(), request.capture_layers.end(), l);
  attention_input(l, captured);
  if (captured) observer->on_values(l, s_.values.data());

  // DotSoftmaxWeightedSum. HF eager: softmax(softcap(q k^T * scale) + mask) v, per head, GQA via
  // repeat_kv; this layer's window. Optional edits (no HF counterpart; docs/method.md section 7):
  // per-head top-N keys, per-head output gates.
  const AttentionShape shape{
      seq, c.heads, c.kv_heads, c.head_dim, r.layers[static_cast<std::size_t>(l)].window, r.attn_scale, r.attn_softcap};
  const std::span<const int> rows = captured ? std::span<const int>(request.capture_rows) : std::span<const int>();
  const std::span<const float> gates =
      request.head_gates.empty()
          ? std::span<const float>()
          : std::span<const float>(request.head_gates).subspan(static_cast<std::size_t>(l) * c.heads, c.heads);
  const std::span<const int> topn =
      request.topn_keys.empty()
          ? std::span<const int>()
          : std::span<const int>(request.topn_keys).subspan(static_cast<std::size_t>(l) * c.heads, c.heads);
  const auto attention_start = std::chrono::steady_clock::now();
  causal_attention(
      shape, s_.q.data(), s_.k.data(), s_.v.data(), s_.attn_out.data(), rows,
      [&](int head, const float* probs) { observer->on_attention(l, head, probs); }, gates, s_.attention, topn,
      backend_.precision());
  timings_.attention_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - attention_start).count();
  // Overflowing q, k or v projections or scores all end up here (NaN probabilities included).
  check_finite(s_.attn_out, static_cast<std::size_t>(seq) * c.q_dim(), in_layer(l, "the attention outputs"));
  if (!update_residual) return;
  output_projection(l);
  mlp(l);
  check_finite(s_.x, static_cast<std::size_t>(seq) * c.hidden, in_layer(l, "the residual stream's values"));
}

// HF: logits = lm_head(norm(x))[rows] (Gemma-2: then final_logit_softcapping)
void Transformer::compute_logits(std::span<const int> rows, std::vector<float>& logits) {
  const int hidden = config_.hidden;
  std::vector<float> picked(rows.size() * static_cast<std::size_t>(hidden));  // [rows, hidden]
  for (std::size_t r = 0; r < rows.size(); ++r) {
    ATTNGEOM_CHECK(rows[r] >= 0 && rows[r] < s_.seq);
    std::copy_n(s_.x.data() + static_cast<std::size_t>(rows[r]) * hidden, hidden, picked.data() + r * hidden);
  }
  norm_rows(picked.data(), static_cast<std::int64_t>(rows.size()), hidden, weights_.final_norm);
  logits.resize(rows.size() * static_cast<std::size_t>(config_.vocab));  // [rows, vocab]
  backend_.linear(picked.data(), static_cast<std::int64_t>(rows.size()), weights_.lm_head, logits.data());
  check_finite(logits, logits.size(), "lm_head: the logits");
  if (config_.recipe.final_softcap > 0) {
    soft_cap(logits.data(), static_cast<std::int64_t>(logits.size()), config_.recipe.final_softcap);
  }
}

void Transformer::forward(std::span<const int> tokens, const ForwardRequest& request, ForwardObserver* observer,
                          std::vector<float>* logits) {
  ATTNGEOM_CHECK(!tokens.empty());
  ATTNGEOM_CHECK(request.head_gates.empty() ||
                 request.head_gates.size() == static_cast<std::size_t>(config_.layers) * config_.heads);
  ATTNGEOM_CHECK(request.topn_keys.empty() ||
                 request.topn_keys.size() == static_cast<std::size_t>(config_.layers) * config_.heads);
  s_.resize(config_, static_cast<int>(tokens.size()));
  embed(tokens);
  // Past the last captured layer's attention, the residual stream feeds only the logits. When
  // none are asked for, that layer's output projection and MLP and every later layer are dead
  // work (a few percent of a 7B model's linear FLOPs). A pass that asks for nothing runs whole: it is
  // the benchmark's bare forward.
  const bool want_logits = logits != nullptr && !request.logit_rows.empty();
  const bool whole = want_logits || observer == nullptr || request.capture_layers.empty();
  const int last = whole ? config_.layers - 1 : request.capture_layers.back();
  ATTNGEOM_CHECK(last < config_.layers);
  for (int l = 0; l <= last; ++l) layer(l, request, observer, whole || l < last);
  if (want_logits) compute_logits(request.logit_rows, *logits);
}

}  // namespace attngeom
