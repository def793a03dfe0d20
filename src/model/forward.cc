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
  throw InputError(what + " overflow float32 (non-finite values); the checkpoint's weights (or head gates) are finite "
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
  norm_weight.resize(static_cast<std::size_t>(c.hidden));
  make_rope_tables(new_seq, c.head_dim, c.rope_theta, rope);
}

Transformer::Transformer(const ModelConfig& config, const Weights& weights, LinearBackend& backend)
    : config_(config), weights_(weights), backend_(backend) {}

const float* Transformer::widen_norm(const TensorView& weight) {
  widen_to_f32(weight.dtype, weight.data, s_.norm_weight.data(), static_cast<std::size_t>(weight.numel()));
  return s_.norm_weight.data();
}

// rms_norm(x) with `weight`, as a linear layers' input: produced block by block where the
// backend converts it (its fp32 home is s_.normed).
LinearInput Transformer::normed_input(const TensorView& weight) {
  const float* scale = widen_norm(weight);
  const std::int64_t hidden = config_.hidden;
  return {s_.seq, hidden, nullptr,
          [this, scale, hidden](std::int64_t begin, std::int64_t end, float* out) {
            rms_norm(s_.x.data() + begin * hidden, end - begin, hidden, scale, config_.norm_weight_offset,
                     config_.rms_norm_eps, out);
          },
          s_.normed.data()};
}

// HF: inputs_embeds = embed_tokens(input_ids) (* sqrt(hidden) for Gemma)
void Transformer::embed(std::span<const int> tokens) {
  const int hidden = config_.hidden;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    ATTNGEOM_CHECK(tokens[i] >= 0 && tokens[i] < config_.vocab);
    float* row = s_.x.data() + i * hidden;
    widen_to_f32(weights_.embed.dtype, weights_.embed.row(tokens[i]), row, static_cast<std::size_t>(hidden));
    if (config_.embedding_scale != 1.0f) {
      for (int j = 0; j < hidden; ++j) row[j] *= config_.embedding_scale;
    }
  }
}

void Transformer::layer(int l, const ForwardRequest& request, ForwardObserver* observer, bool update_residual) {
  const ModelConfig& c = config_;
  const LayerWeights& w = weights_.layers[static_cast<std::size_t>(l)];
  const int seq = s_.seq;
  const bool captured = observer != nullptr && std::binary_search(request.capture_layers.begin(),
                                                                  request.capture_layers.end(), l);

  // ComputeQKV. HF: h = input_layernorm(x); q, k, v = q_proj(h), k_proj(h), v_proj(h)
  // q [seq, heads*head_dim]; k, v [seq, kv_heads*head_dim]
  const LinearOutput qkv[] = {{&w.q_proj, s_.q.data()}, {&w.k_proj, s_.k.data()}, {&w.v_proj, s_.v.data()}};
  backend_.linear_products(normed_input(w.attn_norm), qkv);
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
    observer->on_values(l, s_.values.data());
  }
  // HF: q, k = apply_rotary_pos_emb(q, k, cos, sin)
  apply_rope(s_.q.data(), seq, c.heads, c.head_dim, s_.rope);
  apply_rope(s_.k.data(), seq, c.kv_heads, c.head_dim, s_.rope);

  // DotSoftmaxWeightedSum. HF eager: softmax(q k^T / sqrt(d) + mask) v, per head, GQA via repeat_kv.
  // Optional edits (no HF counterpart; docs/method.md section 7): per-head top-N keys, per-head output gates.
  const AttentionShape shape{seq, c.heads, c.kv_heads, c.head_dim, c.sliding_window,
                             1.0f / std::sqrt(static_cast<float>(c.head_dim))};
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
  timings_.attention_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - attention_start).count();
  // Overflowing q, k or v projections or scores all end up here (NaN probabilities included).
  check_finite(s_.attn_out, static_cast<std::size_t>(seq) * c.q_dim(), in_layer(l, "the attention outputs"));
  if (!update_residual) return;

  // OutputProjection. HF: x = x + o_proj(attn_output)
  backend_.linear(s_.attn_out.data(), seq, w.o_proj, s_.proj.data());  // [seq, hidden]
  add_in_place(s_.x.data(), s_.proj.data(), static_cast<std::int64_t>(seq) * c.hidden);

  // Mlp. HF: x = x + down_proj(act(gate_proj(h)) * up_proj(h)), h = post_attention_layernorm(x)
  const LinearOutput gate_up[] = {{&w.gate_proj, s_.gate.data()}, {&w.up_proj, s_.up.data()}};  // [seq, intermediate]
  backend_.linear_products(normed_input(w.mlp_norm), gate_up);
  const std::int64_t intermediate = c.intermediate;
  const LinearInput activated{seq, intermediate, nullptr,
                              [&](std::int64_t begin, std::int64_t end, float* out) {
                                gated_activation(c.activation, s_.gate.data() + begin * intermediate,
                                                 s_.up.data() + begin * intermediate, out, (end - begin) * intermediate);
                              },
                              s_.gate.data()};
  const LinearOutput down{&w.down_proj, s_.proj.data()};  // [seq, hidden]
  backend_.linear_products(activated, {&down, 1});
  add_in_place(s_.x.data(), s_.proj.data(), static_cast<std::int64_t>(seq) * c.hidden);
  check_finite(s_.x, static_cast<std::size_t>(seq) * c.hidden, in_layer(l, "the residual stream's values"));
}

// HF: logits = lm_head(norm(x))[rows]
void Transformer::compute_logits(std::span<const int> rows, std::vector<float>& logits) {
  const int hidden = config_.hidden;
  std::vector<float> picked(rows.size() * static_cast<std::size_t>(hidden));  // [rows, hidden]
  for (std::size_t r = 0; r < rows.size(); ++r) {
    ATTNGEOM_CHECK(rows[r] >= 0 && rows[r] < s_.seq);
    std::copy_n(s_.x.data() + static_cast<std::size_t>(rows[r]) * hidden, hidden, picked.data() + r * hidden);
  }
  rms_norm(picked.data(), static_cast<std::int64_t>(rows.size()), hidden, widen_norm(weights_.final_norm),
           config_.norm_weight_offset, config_.rms_norm_eps, picked.data());
  logits.resize(rows.size() * static_cast<std::size_t>(config_.vocab));  // [rows, vocab]
  backend_.linear(picked.data(), static_cast<std::int64_t>(rows.size()), weights_.lm_head, logits.data());
  check_finite(logits, logits.size(), "lm_head: the logits");
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
