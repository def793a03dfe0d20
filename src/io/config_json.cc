#include "io/config_json.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "io/config_fields.h"
#include "io/config_layers.h"
#include "io/config_rope.h"
#include "util/error.h"
#include "util/file_read.h"
#include "util/json_parse.h"

namespace attngeom {
namespace {

// The route that exists for a model the engine does not read.
constexpr const char* kDumpRoute =
    "; any model transformers runs can still be analysed from its attentions and values: attngeom.write_dump, "
    "then attngeom metrics (docs/python.md)";

using nlohmann::json;

Activation parse_activation(const FieldReader& f, const Family& family) {
  const std::string name = f.string_or(family.activation_key, family.activation_default);
  if (name == "silu" || name == "swish") return Activation::kSilu;
  if (name == "gelu_pytorch_tanh" || name == "gelu_new" || name == "gelu_fast") return Activation::kGeluTanh;
  if (name == "gelu") return Activation::kGeluErf;
  if (name == "relu") return Activation::kRelu;
  throw f.error(family.activation_key,
                "'" + name + "' is not supported (supported: silu, gelu_pytorch_tanh, gelu_new, gelu, relu)");
}

// Mixture-of-experts layers are not a dense MLP; refused unless the family reads them under
// this key (MoeTraits::experts_key) or its alias.
void refuse_moe(const FieldReader& f, const MoeTraits* moe) {
  for (const char* key : {"num_experts", "num_local_experts"}) {
    if (moe != nullptr && (std::string_view(key) == moe->experts_key || std::string_view(key) == moe->experts_alias))
      continue;
    const json* v = f.find(key);
    if (v != nullptr && !v->is_null() && !(v->is_number_integer() && v->get<std::int64_t>() == 0)) {
      throw f.error(key,
                    std::string("is set: mixture-of-experts models are not supported (dense MLPs only)") + kDumpRoute);
    }
  }
}

// A mixture of experts' sizes and routing (MoeTraits): the expert count, top_k, whether the
// top-k weights are renormalised, the experts' width, and which layers are sparse.
void parse_moe(const FieldReader& f, const MoeTraits& moe, const ModelConfig& c, RecipeInputs& in) {
  const char* experts_key = !present(f, moe.experts_key) && *moe.experts_alias != '\0' && present(f, moe.experts_alias)
                                ? moe.experts_alias
                                : moe.experts_key;
  // Qwen3MoeConfig: num_experts 0 makes every layer dense.
  in.experts = f.int_or(experts_key, moe.experts, moe.sparse_step ? 0 : 1);
  in.top_k = f.int_or("num_experts_per_tok", moe.top_k, 1);
  if (in.experts > 0 && in.top_k > in.experts) {
    throw f.error("num_experts_per_tok", "(" + std::to_string(in.top_k) + ") exceeds " + experts_key + " (" +
                                             std::to_string(in.experts) + ")");
  }
  in.renormalize = *moe.renormalize_key != '\0' ? f.bool_or(moe.renormalize_key, moe.renormalize) : moe.renormalize;
  in.expert_intermediate =
      *moe.intermediate_key != '\0' ? f.positive_int_or(moe.intermediate_key, moe.intermediate) : c.intermediate;
  if (*moe.shared_intermediate_key != '\0') {
    in.shared_intermediate = f.positive_int_or(moe.shared_intermediate_key, moe.shared_intermediate);
  }
  if (moe.sparse_step) {
    in.sparse_step = f.int_or("decoder_sparse_step", 1, 1);
    in.dense_layers = parse_layer_list(f, "mlp_only_layers", c.layers);
  }
}

// OPTConfig's switches for layouts no released OPT but opt-350m uses (post-LN, a projected
// embedding), and for layers without biases or norm weights; none is built.
void refuse_opt_variants(const FieldReader& f, const ModelConfig& c) {
  if (!f.bool_or("do_layer_norm_before", true)) {
    throw f.error("do_layer_norm_before", "must be true (post-LN OPT, as opt-350m, is not supported)");
  }
  if (present(f, "word_embed_proj_dim") && f.positive_int("word_embed_proj_dim") != c.hidden) {
    throw f.error("word_embed_proj_dim", "must equal hidden_size (" + std::to_string(c.hidden) +
                                             "): projected embeddings, as opt-350m's, are not supported");
  }
  if (!f.bool_or("enable_bias", true))
    throw f.error("enable_bias", "must be true (OPT without biases is not supported)");
  if (!f.bool_or("layer_norm_elementwise_affine", true)) {
    throw f.error("layer_norm_elementwise_affine", "must be true (LayerNorms without weights are not supported)");
  }
  if (f.bool_or("_remove_final_layer_norm", false)) {
    throw f.error("_remove_final_layer_norm", "must be false (OPT without its final LayerNorm is not supported)");
  }
}

// FalconModel's layouts (transformers 4.57 modeling_falcon.py). The kv heads: multi_query, one;
// new_decoder_architecture, num_kv_heads; else num_kv_heads, which the fused projection's
// view(heads, 3, head_dim) requires to equal the heads.
int falcon_kv_heads(const FieldReader& f, int heads) {
  const bool new_architecture = f.bool_or("new_decoder_architecture", false);
  if (!new_architecture && f.bool_or("multi_query", true)) return 1;
  const int kv_heads = f.int_or("num_kv_heads", heads, 1);
  if (!new_architecture && kv_heads != heads) {
    throw f.error("num_kv_heads", "must equal num_attention_heads without multi_query or new_decoder_architecture");
  }
  return kv_heads;
}

// FalconDecoderLayer's norms and residual: parallel_attn, x = x + attn(ln(x)) + mlp(ln(x)) with
// one input_layernorm, or with ln_attn and ln_mlp under new_decoder_architecture and
// num_ln_in_parallel_attn 2 (its default there); else sequential with post_attention_layernorm.
// The combinations FalconDecoderLayer builds without the norms its forward reads are refused.
// Falcon-RW's switches: bias (every projection's), alibi (in place of RoPE, rounded to bf16 and
// added to q.k before FalconAttention scales it).
void parse_falcon_layout(const FieldReader& f, RecipeInputs& in) {
  in.linear_bias = f.bool_or("bias", false);
  in.alibi = f.bool_or("alibi", false);
  in.alibi_before_scale = true;
  const bool new_architecture = f.bool_or("new_decoder_architecture", false);
  in.parallel_residual = f.bool_or("parallel_attn", true);
  const int norms = f.int_or("num_ln_in_parallel_attn", new_architecture ? 2 : 1, 1);
  if (norms > 2) throw f.error("num_ln_in_parallel_attn", "must be 1 or 2");
  if (new_architecture && !in.parallel_residual) {
    throw f.error("parallel_attn", "must be true with new_decoder_architecture");
  }
  if (!new_architecture && in.parallel_residual && norms == 2) {
    throw f.error("num_ln_in_parallel_attn", "must be 1 without new_decoder_architecture");
  }
  if (!in.parallel_residual) {
    in.norms = NormNames{"input_layernorm.weight", "", "post_attention_layernorm.weight", ""};
  } else if (norms == 2) {
    in.norms = NormNames{"ln_attn.weight", "", "ln_mlp.weight", ""};
  }
}

// MPT's switches (transformers 4.57 MptConfig, MptAttentionConfig): MptAttention reads
// attn_config.softmax_scale; MptModel applies ALiBi always, with alibi_bias_max 8, and the rest
// of what MosaicML's configs can ask for (q/k LayerNorms, prefix LM, other attention types,
// logit scales, RMSNorms, MLP widths, biases) transformers would run as the plain model: refused.
void parse_mpt(const FieldReader& top, RecipeInputs& in) {
  if (!top.bool_or("no_bias", true)) throw top.error("no_bias", "must be true (MPT with biases is not supported)");
  if (top.int_or("expansion_ratio", 4, 1) != 4) throw top.error("expansion_ratio", "must be 4 (MptMLP's width)");
  if (present(top, "logit_scale")) throw top.error("logit_scale", "must be null (scaled logits are not supported)");
  const std::string norm = top.string_or("norm_type", "low_precision_layernorm");
  if (norm != "low_precision_layernorm" && norm != "layernorm") {
    throw top.error("norm_type", "'" + norm + "' is not supported (expected layernorm or low_precision_layernorm)");
  }
  const json* config = top.find("attn_config");
  if (config == nullptr || config->is_null()) return;
  if (!config->is_object()) throw top.error("attn_config", "must be an object");
  const FieldReader f = top.nested(*config, "attn_config.");
  if (!f.bool_or("alibi", true)) throw f.error("alibi", "must be true (MPT without ALiBi is not supported)");
  if (f.int_or("alibi_bias_max", 8, 1) != 8) {
    throw f.error("alibi_bias_max", "must be 8 (transformers' MPT builds its slopes with 8)");
  }
  if (f.bool_or("qk_ln", false)) throw f.error("qk_ln", "must be false (LayerNorms on q and k are not supported)");
  if (f.bool_or("prefix_lm", false)) throw f.error("prefix_lm", "must be false (causal attention only)");
  // MptAttention clamps only `if self.clip_qkv`: 0 is none.
  const json* clip = f.find("clip_qkv");
  const bool zero = clip != nullptr && clip->is_number() && clip->get<double>() == 0;
  in.clip_qkv = zero ? 0.0f : f.positive_float_or("clip_qkv", 0.0f);
  const std::string type = f.string_or("attn_type", "multihead_attention");
  if (type != "multihead_attention") {
    throw f.error("attn_type", "'" + type + "' is not supported (expected multihead_attention)");
  }
  in.softmax_scale = f.positive_float_or("softmax_scale", 0.0f);
}

// StableLmDecoderLayer: q/k/v biases with use_qkv_bias; use_parallel_residual: x = x + attn(ln(x)) +
// mlp(ln(x)), input_layernorm feeding both (no post_attention_layernorm), else sequential.
void parse_stablelm_layout(const FieldReader& f, RecipeInputs& in) {
  // StableLmAttention splits heads by hidden_size / num_attention_heads whatever head_dim says.
  if (static_cast<std::int64_t>(in.head_dim) * in.heads != in.hidden) {
    throw f.error("head_dim", "must be hidden_size / num_attention_heads for stablelm");
  }
  in.qkv_bias = f.bool_or("use_qkv_bias", false);
  in.parallel_residual = f.bool_or("use_parallel_residual", false);
  if (in.parallel_residual) in.norms = NormNames{"input_layernorm.weight", "", "input_layernorm.weight", ""};
}

// Positive float, null (0: none), or the family default when absent.
float optional_cap(const FieldReader& f, const char* key, double fallback) {
  const json* v = f.find(key);
  if (v == nullptr) return static_cast<float>(fallback);
  return v->is_null() ? 0.0f : f.positive_float_or(key, 0.0f);
}

RecipeInputs recipe_inputs(const FieldReader& f, const Family& family, const ModelConfig& c, bool multimodal) {
  const FamilyDefaults& d = family.defaults;
  RecipeInputs in;
  in.layers = c.layers;
  in.hidden = c.hidden;
  in.heads = c.heads;
  in.head_dim = c.head_dim;
  in.multimodal = multimodal;
  in.attention_bias = f.bool_or("attention_bias", family.attention_bias_default);
  in.qkv_bias = *family.qkv_bias_key != '\0' && f.bool_or(family.qkv_bias_key, true);
  in.parallel_residual = f.bool_or("use_parallel_residual", true);
  if (*family.linear_bias_key != '\0') in.linear_bias = f.bool_or(family.linear_bias_key, true);
  if (family.reads_clip_qkv) in.clip_qkv = f.positive_float_or("clip_qkv", 0.0f);
  in.multi_query = family.reads_multi_query && f.bool_or("multi_query", true);
  in.alibi = family.alibi;
  if (family.reads_falcon_layout) parse_falcon_layout(f, in);
  if (family.reads_mpt_config) parse_mpt(f, in);
  if (family.reads_stablelm_layout) parse_stablelm_layout(f, in);
  if (family.reads_multipliers) {
    in.embedding_multiplier = f.positive_float_or("embedding_multiplier", 1.0f);
    in.attention_multiplier = f.positive_float_or("attention_multiplier", 1.0f);
    in.residual_multiplier = f.positive_float_or("residual_multiplier", 1.0f);
    in.logits_scaling = f.positive_float_or("logits_scaling", 1.0f);
  }
  in.activation = parse_activation(f, family);
  in.query_pre_attn_scalar = f.positive_float_or("query_pre_attn_scalar", static_cast<float>(d.query_pre_attn_scalar));
  in.attn_softcap = optional_cap(f, "attn_logit_softcapping", d.attn_softcap);
  in.final_softcap = optional_cap(f, "final_logit_softcapping", d.final_softcap);
  in.sliding_window = f.find("sliding_window") == nullptr ? d.sliding_window : f.int_or("sliding_window", 0, 1);
  in.use_sliding_window = f.bool_or("use_sliding_window", false);
  in.max_window_layers = f.int_or("max_window_layers", d.max_window_layers, 0);
  if (family.window == WindowRule::kQwen || family.window == WindowRule::kLayerTypes ||
      family.window == WindowRule::kNoPe) {
    in.sliding_layers = parse_layer_types(f, c.layers);
  }
  if (family.reads_no_rope_layers) in.rope_layers = parse_rope_layers(f, c.layers);
  if (family.window == WindowRule::kLocalLayers) {
    in.sliding_window = f.int_or("window_size", family.defaults.sliding_window, 1);
    in.sliding_layers = parse_local_layers(f, c.layers);
  }
  // SmolLM3 (transformers 4.57): a sliding_attention layer type without use_sliding_window gets
  // the sliding mask in eager and sdpa attention but none in flash attention.
  if (family.window == WindowRule::kNoPe && !in.use_sliding_window &&
      std::find(in.sliding_layers.begin(), in.sliding_layers.end(), true) != in.sliding_layers.end()) {
    throw f.error("layer_types",
                  "has sliding_attention layers while use_sliding_window is false (transformers' "
                  "attention implementations disagree on whether they slide)");
  }
  if (family.reads_window_pattern) in.window_pattern = f.int_or("sliding_window_pattern", 0, 1);
  if (family.moe != nullptr) parse_moe(f, *family.moe, c, in);
  // Qwen3MoeAttention windows every layer with use_sliding_window in 4.57, but only the layers from
  // max_window_layers on in 4.51; the released models set it false.
  if (family.refuses_sliding_window && in.use_sliding_window) {
    throw f.error("use_sliding_window", std::string("must be false for ") + family.model_type +
                                            " (which layers it windows differs between transformers versions)");
  }
  parse_rope_inputs(f, family, c, in);
  return in;
}

}  // namespace

ModelConfig parse_model_config(const std::string& json_text, const std::string& source) {
  json root;
  try {
    root = parse_json(json_text, source);
  } catch (const json::exception& e) {
    throw InputError(source + ": malformed JSON (" + std::string(e.what()) + ")");
  }
  if (!root.is_object()) throw InputError(source + ": expected a JSON object");
  const FieldReader top(root, source);

  ModelConfig c;
  c.model_type = top.string_or("model_type", "");
  if (c.model_type.empty()) throw top.error("model_type", "is missing (supported: " + supported_model_types() + ")");
  // Gemma-3 multimodal: the text tower's config is text_config (Gemma3TextConfig), its
  // weights are under language_model.; the vision tower is never read.
  const bool multimodal = c.model_type == "gemma3";
  const Family* family = find_family(multimodal ? "gemma3_text" : c.model_type);
  if (family == nullptr) {
    refuse_moe(top, nullptr);
    throw InputError(source + ": unsupported model_type '" + c.model_type + "' (supported: " + supported_model_types() +
                     ")" + kDumpRoute);
  }
  const json* text_config = multimodal ? top.find("text_config") : &root;
  if (text_config == nullptr || !text_config->is_object()) throw top.error("text_config", "must be an object");
  // HF attribute_map (GPT2Config: n_embd is hidden_size, ...): the family's own keys, read under
  // the standard names when those are absent.
  json aliased = *text_config;
  if (family->config_aliases != nullptr) {
    for (auto* alias = family->config_aliases; (*alias)[0] != nullptr; ++alias) {
      const auto it = text_config->find((*alias)[1]);
      if (it == text_config->end()) continue;
      // Which one a config class keeps when both are written differs (BloomConfig: n_embed).
      if (aliased.contains((*alias)[0]) && aliased[(*alias)[0]] != *it) {
        throw InputError(source + ": fields '" + (*alias)[0] + "' and '" + (*alias)[1] + "' disagree");
      }
      aliased[(*alias)[0]] = *it;
    }
  }
  const FieldReader f = multimodal ? top.nested(aliased, "text_config.") : FieldReader(aliased, source);
  if (multimodal) refuse_moe(top, nullptr);
  refuse_moe(f, family->moe);
  const FamilyDefaults& defaults = family->defaults;
  c.hidden = f.positive_int_or("hidden_size", defaults.hidden);
  if (family->intermediate_4x && (f.find("intermediate_size") == nullptr || f.find("intermediate_size")->is_null())) {
    c.intermediate = 4 * c.hidden;  // GPT2MLP: n_inner if not None else 4 * hidden_size
  } else {
    c.intermediate = f.positive_int_or("intermediate_size", defaults.intermediate);
  }
  c.layers = f.positive_int_or("num_hidden_layers", defaults.layers);
  c.heads = f.positive_int_or("num_attention_heads", defaults.heads);
  c.kv_heads = family->reads_falcon_layout ? falcon_kv_heads(f, c.heads)
               : family->reads_multi_query
                   ? (f.bool_or("multi_query", true) ? 1 : c.heads)
                   : f.int_or("num_key_value_heads", defaults.kv_heads > 0 ? defaults.kv_heads : c.heads, 1);
  c.vocab = f.positive_int_or("vocab_size", defaults.vocab);
  c.max_positions = f.int_or("max_position_embeddings", 1 << 30, 1);
  // The norms' epsilon (LayerNorm families: layer_norm_eps); ModelConfig keeps it as rms_norm_eps.
  c.rms_norm_eps = *family->eps_key == '\0'
                       ? static_cast<float>(defaults.rms_norm_eps)
                       : f.positive_float_or(family->eps_key, static_cast<float>(defaults.rms_norm_eps));
  c.bos_token_id = f.int_or("bos_token_id", defaults.bos_token_id, 0);
  c.torch_dtype = top.string_or("torch_dtype", "");
  if (!c.torch_dtype.empty() && c.torch_dtype != "float32" && c.torch_dtype != "float16" &&
      c.torch_dtype != "bfloat16") {
    throw top.error("torch_dtype", "'" + c.torch_dtype + "' is not supported (expected float32, float16 or bfloat16)");
  }
  if (c.heads % c.kv_heads != 0) {
    throw f.error("num_key_value_heads", "(" + std::to_string(c.kv_heads) + ") must divide num_attention_heads (" +
                                             std::to_string(c.heads) + ")");
  }
  // head_dim may differ from hidden/heads (Gemma-7B: 16 x 256 against 3072; Qwen3).
  if (present(f, "head_dim")) {
    c.head_dim = f.positive_int("head_dim");
  } else if (defaults.head_dim > 0) {
    c.head_dim = defaults.head_dim;
  } else if (c.hidden % c.heads == 0) {
    c.head_dim = c.hidden / c.heads;
  } else {
    throw f.error("head_dim", "is missing and hidden_size is not a multiple of num_attention_heads");
  }
  if (c.head_dim % 2 != 0) throw f.error("head_dim", "must be even for RoPE");
  // Sizes are ints in the forward pass; absurd values would overflow them long before a
  // file could hold such weights.
  if (c.layers > kMaxLayers) {
    throw f.error("num_hidden_layers",
                  "(" + std::to_string(c.layers) + ") exceeds the limit of " + std::to_string(kMaxLayers));
  }
  if (static_cast<std::int64_t>(c.heads) * c.head_dim > (std::int64_t{1} << 30)) {
    throw f.error("num_attention_heads", "times head_dim exceeds 2^30");
  }
  if (c.bos_token_id >= c.vocab) throw f.error("bos_token_id", "must be below vocab_size");

  if (f.bool_or("use_bidirectional_attention", false)) {
    throw f.error("use_bidirectional_attention", "must be false (causal attention only)");
  }
  if (f.bool_or("mlp_bias", false)) throw f.error("mlp_bias", "must be false (no MLP biases)");
  // GPT2Attention: scores / (layer_idx + 1) with scale_attn_by_inverse_layer_idx; not built.
  if (f.bool_or("scale_attn_by_inverse_layer_idx", false)) {
    throw f.error("scale_attn_by_inverse_layer_idx", "must be false (not supported)");
  }
  // PhiAttention with qk_layernorm: LayerNorms on q and k; not built.
  if (f.bool_or("qk_layernorm", false)) throw f.error("qk_layernorm", "must be false (not supported)");
  if (!f.bool_or("scale_attn_weights", true)) throw f.error("scale_attn_weights", "must be true (not supported)");
  refuse_opt_variants(f, c);
  // BloomBlock with apply_residual_connection_post_layernorm: the residual is the normed input.
  if (f.bool_or("apply_residual_connection_post_layernorm", false)) {
    throw f.error("apply_residual_connection_post_layernorm", "must be false (not supported)");
  }
  // BloomAttention and BloomMLP with slow_but_exact and pretraining_tp > 1 drop the biases of
  // self_attention.dense and mlp.dense_4h_to_h.
  if (f.bool_or("slow_but_exact", false) && f.int_or("pretraining_tp", 1, 1) > 1) {
    throw f.error("slow_but_exact", "must be false with pretraining_tp > 1 (not supported)");
  }
  // OlmoAttention and OlmoeAttention clamp q, k and v to [-clip_qkv, clip_qkv]; the other families'
  // classes ignore the key, which such a config may not expect.
  if (!family->reads_clip_qkv && present(f, "clip_qkv")) {
    throw f.error("clip_qkv",
                  std::string("must be null for ") + family->model_type + " (its attention does not clamp)");
  }
  c.tie_embeddings = top.bool_or("tie_word_embeddings", defaults.tie_embeddings);
  c.recipe = build_recipe(*family, recipe_inputs(f, *family, c, multimodal));
  c.sliding_window = uniform_window(c.recipe);
  return c;
}

ModelConfig load_model_config(const std::filesystem::path& config_path) {
  return parse_model_config(read_file_bytes(config_path, kMaxConfigBytes, "model config (a Hugging Face config.json)"),
                            config_path.string());
}

}  // namespace attngeom
