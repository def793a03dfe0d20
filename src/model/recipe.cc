#include "model/recipe.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "util/error.h"
#include "util/half.h"

namespace attngeom {
namespace {

bool is_sliding(const Family& family, const RecipeInputs& in, int layer) {
  switch (family.window) {
    case WindowRule::kNone:
      return false;
    case WindowRule::kEveryLayer:
      return true;
    case WindowRule::kQwen:
      // Qwen2Config: sliding_window = sliding_window if use_sliding_window else None;
      // layer_types default: sliding iff sliding_window is not None and i >= max_window_layers.
      if (!in.use_sliding_window || in.sliding_window == 0) return false;
      return in.sliding_layers.empty() ? layer >= in.max_window_layers : in.sliding_layers[layer];
    case WindowRule::kLocalLayers:
      return in.sliding_layers[static_cast<std::size_t>(layer)];
    case WindowRule::kNoPe:
      // SmolLM3Config: layer_types default: sliding iff use_sliding_window, sliding_window is not
      // None and the layer has no RoPE; SmolLM3Attention windows only with use_sliding_window.
      if (!in.use_sliding_window || in.sliding_window == 0) return false;
      return in.sliding_layers.empty() ? !in.rope_layers[static_cast<std::size_t>(layer)]
                                       : in.sliding_layers[static_cast<std::size_t>(layer)];
    case WindowRule::kLayerTypes:
      // Gemma2Config / Gemma3TextConfig: layer_types default: sliding iff (i + 1) % pattern != 0.
      if (!in.sliding_layers.empty()) return in.sliding_layers[layer];
      return (layer + 1) % (in.window_pattern > 0 ? in.window_pattern : family.global_every) != 0;
  }
  return false;
}

// _compute_yarn_parameters: the frequency indices whose wavelengths fit between beta_fast and
// beta_slow rotations in the pretrained length; below the band frequencies are kept, above
// it divided by the factor, and blended linearly within it.
class YarnBand {
 public:
  YarnBand(const RopeSpec& spec, int dim) {
    // The index whose frequency turns `rotations` times over original_max_positions.
    const auto index_of = [&](double rotations) {
      return dim * std::log(spec.original_max_positions / (rotations * 2 * std::numbers::pi)) /
             (2 * std::log(spec.theta));
    };
    low_ = index_of(spec.beta_fast);
    high_ = index_of(spec.beta_slow);
    if (spec.truncate) {
      low_ = std::floor(low_);
      high_ = std::ceil(high_);
    }
    low_ = std::max(low_, 0.0);
    high_ = std::min(high_, static_cast<double>(dim - 1));
    if (low_ == high_) high_ += 0.001;  // as HF: a step instead of a division by zero
  }
  // The share of frequency i divided by the factor: 0 below the band, 1 above it.
  double ramp(double i) const { return std::clamp((i - low_) / (high_ - low_), 0.0, 1.0); }

 private:
  double low_ = 0;
  double high_ = 0;
};

int rope_index(std::vector<RopeSpec>& ropes, const RopeSpec& spec) {
  for (std::size_t i = 0; i < ropes.size(); ++i) {
    if (ropes[i] == spec) return static_cast<int>(i);
  }
  ropes.push_back(spec);
  return static_cast<int>(ropes.size()) - 1;
}

}  // namespace

std::vector<double> rope_inv_freq(const RopeSpec& spec, int head_dim, int seq) {
  std::vector<double> inv_freq(static_cast<std::size_t>(head_dim / 2));
  // _compute_longrope_parameters / _longrope_frequency_update: long factors once the sequence
  // exceeds the pretrained length.
  const std::vector<double>& ext = seq > spec.original_max_positions ? spec.long_factor : spec.short_factor;
  for (std::size_t i = 0; i < inv_freq.size(); ++i) {
    // _compute_default_rope_parameters: 1 / base^(2i / dim)
    double f = 1.0 / std::pow(spec.theta, static_cast<double>(2 * i) / head_dim);
    if (spec.type == RopeType::kLinear) f /= spec.factor;  // positions / factor
    if (spec.type == RopeType::kLongRope) f /= ext[i];     // 1 / (ext * base^(2i / dim))
    if (spec.type == RopeType::kLlama3) {
      // _compute_llama3_parameters: long wavelengths slowed by `factor`, short ones kept,
      // the band between interpolated smoothly.
      const double low_freq_wavelen = spec.original_max_positions / spec.low_freq_factor;
      const double high_freq_wavelen = spec.original_max_positions / spec.high_freq_factor;
      const double wavelen = 2 * std::numbers::pi / f;
      if (wavelen > low_freq_wavelen) {
        f /= spec.factor;
      } else if (!(wavelen < high_freq_wavelen)) {
        const double smooth = (spec.original_max_positions / wavelen - spec.low_freq_factor) /
                              (spec.high_freq_factor - spec.low_freq_factor);
        f = (1 - smooth) * f / spec.factor + smooth * f;
      }
    }
    if (spec.type == RopeType::kYarn) {
      const double ramp = YarnBand(spec, head_dim).ramp(static_cast<double>(i));
      f = f / spec.factor * ramp + f * (1 - ramp);
    }
    inv_freq[i] = f;
  }
  return inv_freq;
}

ModelRecipe build_recipe(const Family& family, const RecipeInputs& in) {
  ATTNGEOM_CHECK(in.sliding_layers.empty() || in.sliding_layers.size() == static_cast<std::size_t>(in.layers));
  ModelRecipe r;
  r.weight_prefix = in.multimodal ? "language_model." : "";
  r.names = family.names != nullptr ? *family.names : TensorNames{};
  r.body_prefix = family.body_prefix;
  r.conv1d = family.conv1d;
  r.norms = in.norms.value_or(family.norms);
  r.norm_kind = family.norm_kind;
  r.norm_bias = family.norm_bias;
  r.norm_affine = family.norm_affine;
  r.clip_qkv = in.clip_qkv;
  // GPTBigCodeAttention without multi_query: c_attn(x).view(..., heads, 3 * head_dim), per head [q | k | v].
  if (family.reads_multi_query && !in.multi_query) std::swap(r.names.qkv_per_group, r.names.qkv_concat);
  r.mlp_bias = family.mlp_bias || in.linear_bias;
  r.parallel_residual = family.parallel_residual_always || (family.reads_parallel_residual && in.parallel_residual);
  const bool rope = family.rope && !in.alibi;
  r.rotary_dim = rope ? in.rotary_dim : 0;
  r.interleaved_rope = family.interleaved_rope;
  r.qk_norm = family.qk_norm;
  r.qkv_bias =
      family.qkv_bias_always || (family.reads_attention_bias && in.attention_bias) || in.qkv_bias || in.linear_bias;
  r.o_bias = (family.reads_attention_bias && in.attention_bias) || family.o_bias_always || in.linear_bias;
  r.lm_head_bias = family.lm_head_bias;
  r.position_offset = family.position_offset;
  r.norm_weight_offset = family.norm_weight_offset;
  r.embedding_scale = family.scale_embeddings ? std::sqrt(static_cast<float>(in.hidden)) : in.embedding_multiplier;
  r.residual_scale = in.residual_multiplier;
  r.logits_scale = 1.0f / in.logits_scaling;
  r.activation = in.activation;
  r.attn_scale = family.unscaled_scores         ? 1.0f
                 : family.reads_multipliers     ? in.attention_multiplier
                 : family.query_pre_attn_scalar ? 1.0f / std::sqrt(in.query_pre_attn_scalar)
                 : in.softmax_scale > 0         ? in.softmax_scale
                                                : 1.0f / std::sqrt(static_cast<float>(in.head_dim));
  if (in.alibi) {
    r.alibi_slopes = alibi_slopes(in.heads);
    r.alibi_before_scale = in.alibi_before_scale;
    // HF Falcon's build_alibi_tensor: slopes.bfloat16()
    if (in.alibi_before_scale) {
      for (float& slope : r.alibi_slopes) slope = bf16_to_f32(f32_to_bf16(slope));
    }
  }
  r.attn_softcap = family.softcaps ? in.attn_softcap : 0.0f;
  r.final_softcap = family.softcaps ? in.final_softcap : 0.0f;
  r.moe = {in.experts, in.top_k, in.renormalize, in.expert_intermediate, in.shared_intermediate};
  r.layers.resize(static_cast<std::size_t>(in.layers));
  for (int l = 0; l < in.layers; ++l) {
    const bool sliding = is_sliding(family, in, l);  // a sliding layer type; its window may be null
    LayerRecipe& layer = r.layers[static_cast<std::size_t>(l)];
    layer.window = sliding ? in.sliding_window : 0;
    // Qwen2MoeDecoderLayer / Qwen3MoeDecoderLayer: sparse iff layer_idx not in mlp_only_layers and num_experts > 0 and
    // (layer_idx + 1) % decoder_sparse_step == 0 (sparse_step 1 and no dense layers elsewhere).
    layer.sparse_mlp = in.experts > 0 && (l + 1) % in.sparse_step == 0 &&
                       std::find(in.dense_layers.begin(), in.dense_layers.end(), l) == in.dense_layers.end();
    // Gemma3TextModel: rotary_emb_local (rope_local_base_freq, default rope) on sliding layers;
    // Olmo3Model: rotary_embs["sliding_attention"] (rope_theta, default rope).
    const bool nope = !in.rope_layers.empty() && !in.rope_layers[static_cast<std::size_t>(l)];
    if (rope && !nope) {
      const bool local = family.local_rope != LocalRope::kNone && sliding;
      layer.rope_table = rope_index(r.ropes, local ? in.local_rope : in.global_rope);
    }
  }
  return r;
}

std::vector<float> alibi_slopes(int heads) {
  int p = 1;
  while (2 * p <= heads) p *= 2;
  std::vector<float> slopes;
  for (int k = 1; k <= p; ++k) slopes.push_back(static_cast<float>(std::exp2(-8.0 * k / p)));
  for (int k = 1; static_cast<int>(slopes.size()) < heads; k += 2) {
    slopes.push_back(static_cast<float>(std::exp2(-8.0 * k / (2 * p))));
  }
  return slopes;
}

int uniform_window(const ModelRecipe& recipe) {
  if (recipe.layers.empty()) return 0;
  const int window = recipe.layers.front().window;
  for (const LayerRecipe& l : recipe.layers) {
    if (l.window != window) return 0;
  }
  return window;
}

}  // namespace attngeom