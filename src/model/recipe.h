#pragma once
// What each model family does differently, and the per-layer recipe the forward pass
// follows. Semantics follow Hugging Face transformers 4.57 (modeling_llama.py,
// modeling_mistral.py, modeling_gemma.py, modeling_gemma2.py, modeling_gemma3.py,
// modeling_qwen2.py, modeling_qwen3.py, modeling_olmo2.py, modeling_olmo3.py, modeling_gpt_neox.py, modeling_gpt2.py,
// modeling_opt.py, modeling_bloom.py, modeling_mpt.py, modeling_phi.py, modeling_phi3.py, modeling_mixtral.py,
// modeling_olmoe.py, modeling_qwen2_moe.py, modeling_qwen3_moe.py, modeling_olmo.py, modeling_starcoder2.py,
// modeling_gpt_bigcode.py, modeling_stablelm.py, modeling_granite.py and modeling_rope_utils.py). The family table in
// families.cc shows every family side by side; the forward pass reads only the resolved ModelRecipe and never a family
// name. Adding a family is adding a row.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ops/elementwise.h"

namespace attngeom {

// RMSNorm applied to the projected queries and keys, before RoPE.
enum class QkNorm {
  kNone,
  kPerHead,          // Qwen3, Gemma-3: over each head's head_dim (weight [head_dim])
  kWholeProjection,  // OLMo-2: over all heads at once (weight [heads * head_dim], [kv_heads * head_dim])
};

// How a family decides which layers attend through a sliding window.
enum class WindowRule {
  kNone,         // full causal attention everywhere (HF LLaMA ignores a sliding_window key)
  kEveryLayer,   // Mistral: sliding_window on every layer (null: none)
  kQwen,         // Qwen2/3: only with use_sliding_window, layers >= max_window_layers (or layer_types)
  kLayerTypes,   // Gemma-2/3: layer_types, else the family's pattern
  kNoPe,         // SmolLM3: only with use_sliding_window: layer_types, else the layers without RoPE
  kLocalLayers,  // GPT-Neo: the "local" entries of attention_layers, window_size keys
};

// Where sliding layers take their RoPE from.
enum class LocalRope {
  kNone,          // every layer the configured RoPE
  kLocalBase,     // Gemma-3: plain RoPE at rope_local_base_freq
  kUnscaledBase,  // OLMo-3: plain RoPE at rope_theta, rope_scaling on full layers only
};

// modeling_rope_utils.py rope types we implement.
enum class RopeType { kDefault, kLinear, kLlama3, kLongRope, kYarn };

struct RopeSpec {
  RopeType type = RopeType::kDefault;
  double theta = 10000.0;
  double factor = 1.0;                     // linear, llama3 and yarn
  double low_freq_factor = 1.0;            // llama3
  double high_freq_factor = 4.0;           // llama3
  double original_max_positions = 8192.0;  // llama3, longrope, yarn: original_max_position_embeddings
  // longrope (Phi-3.5, Phi-4-mini): per-frequency divisors [rotary_dim / 2], the long ones for
  // sequences longer than original_max_positions; cos and sin times attention_factor.
  std::vector<double> short_factor;
  std::vector<double> long_factor;
  // yarn (OLMo-3, Qwen long-context, DeepSeek): frequencies blended from kept to divided by
  // `factor` over the band between beta_fast and beta_slow rotations in the pretrained length,
  // its edges rounded outwards unless truncate is false; cos and sin times attention_factor.
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  bool truncate = true;
  double mscale = 0;  // with mscale_all_dim (DeepSeek): the attention factor's ratio; 0: absent
  double mscale_all_dim = 0;
  double attention_factor = 1.0;  // longrope and yarn
  bool operator==(const RopeSpec&) const = default;
};

// RoPE inverse frequencies [rotary_dim / 2] of `spec` for a sequence of `seq` tokens, in double
// (HF: _compute_default_rope_parameters, _compute_linear_scaling_rope_parameters,
// _compute_llama3_parameters, _compute_longrope_parameters with its seq_len rule,
// _compute_yarn_parameters).
std::vector<double> rope_inv_freq(const RopeSpec& spec, int rotary_dim, int seq);

// The kind of every norm of a family: HF LlamaRMSNorm-style, or nn.LayerNorm with a bias.
enum class NormKind { kRms, kLayer };

// Where a family's checkpoint keeps its tensors. Model-level names are whole; layer-level
// ones are relative to `layers` + "N."; projection names take ".weight" / ".bias".
struct TensorNames {
  const char* embed = "model.embed_tokens.weight";
  const char* final_norm = "model.norm";  // + ".weight" (and ".bias" for LayerNorm)
  const char* lm_head = "lm_head.weight";
  const char* layers = "model.layers.";
  const char* q = "self_attn.q_proj";
  const char* k = "self_attn.k_proj";
  const char* v = "self_attn.v_proj";
  const char* o = "self_attn.o_proj";
  // Non-empty: q, k and v fused in one projection [(heads + 2 * kv_heads) * head_dim, hidden],
  // laid out per kv head g as the rows of its heads / kv_heads query heads, then its k, then its
  // v, each head_dim rows (HF GPT-NeoX: qkv.view(..., heads, 3 * head_dim).chunk(3), one query
  // head per group; Falcon: qkv.view(..., kv_heads, heads / kv_heads + 2, head_dim)); q, k, v
  // above are then unused.
  const char* qkv_per_group = "";
  // Non-empty: q, k and v fused as consecutive row blocks [q_dim | kv_dim | kv_dim] (GPT-2's
  // c_attn, once transposed: query, key, value = c_attn(x).split(hidden, dim=2)).
  const char* qkv_concat = "";
  // Non-empty: learned absolute position embeddings [max_positions + position_offset, hidden]
  // added to the token embeddings (GPT-2's wpe, OPT's embed_positions).
  const char* position_embed = "";
  // Non-empty: a LayerNorm on the embeddings (+ ".weight", ".bias"; BLOOM's
  // word_embeddings_layernorm).
  const char* embed_norm = "";
  const char* gate = "mlp.gate_proj";  // empty (and no gate_up): a non-gated MLP, down(act(up(x)))
  // Non-empty: gate and up fused as [gate | up] row blocks [2 * intermediate, hidden] (Phi-3's
  // gate_up_proj: gate, up = gate_up_proj(x).chunk(2, dim=-1)); gate and up above unused.
  const char* gate_up = "";
  const char* up = "mlp.up_proj";
  const char* down = "mlp.down_proj";
  // Mixtures of experts: the router [experts, hidden] (+ ".weight") and expert e's gated MLP
  // under experts + "e." (Mixtral: block_sparse_moe.gate, block_sparse_moe.experts.e.w1/w3/w2;
  // OLMoE, Qwen3-MoE: mlp.gate, mlp.experts.e.gate_proj/up_proj/down_proj).
  const char* router = "";
  const char* experts = "";
  const char* expert_gate = "w1";
  const char* expert_up = "w3";
  const char* expert_down = "w2";
  // The same experts as transformers 5.x holds them and writes them with
  // save_pretrained(save_original_format=False), every family alike: the router under
  // fused_router, and fused_experts + "gate_up_proj" [experts, 2 * inter, hidden] (each expert's
  // [gate | up]) and + "down_proj" [experts, hidden, inter] (ModelRecipe::fused_experts).
  const char* fused_router = "mlp.gate";
  const char* fused_experts = "mlp.experts.";
  // Qwen2-MoE's shared expert (MoeRecipe::shared_intermediate): a gated MLP under shared_expert +
  // expert_gate / expert_up / expert_down, scaled per token by sigmoid(shared_expert_gate(h)).
  const char* shared_expert = "mlp.shared_expert.";
  const char* shared_expert_gate = "mlp.shared_expert_gate";
};

// The checkpoint tensor names of one layer's four norm slots, relative to "model.layers.N.";
// empty: the family has no norm there.
struct NormNames {
  const char* attn_input = "";   // before q/k/v
  const char* attn_output = "";  // on o_proj's output, before the residual add
  const char* mlp_input = "";    // before gate/up
  const char* mlp_output = "";   // on down_proj's output, before the residual add
};

// HF config class defaults for keys a config.json may omit.
struct FamilyDefaults {
  int kv_heads = 0;  // 0: num_attention_heads
  int head_dim = 0;  // 0: hidden_size / num_attention_heads
  int bos_token_id = 1;
  bool tie_embeddings = false;
  double rope_theta = 10000.0;
  double rms_norm_eps = 1e-6;
  int sliding_window = 4096;           // when the key is absent (families with windows)
  double query_pre_attn_scalar = 256;  // families that scale scores by it
  double attn_softcap = 0;             // 0: null
  double final_softcap = 0;            // 0: null
  // Sizes a sparse config may leave to the class (Gemma3TextConfig under a multimodal
  // text_config); 0: the key is required.
  int vocab = 0, hidden = 0, intermediate = 0, layers = 0, heads = 0;
  int max_window_layers = 28;  // Qwen2Config / Qwen3Config
};

// A mixture-of-experts family's config keys and its config class's defaults.
struct MoeTraits {
  const char* experts_key;  // the expert count (Mixtral: num_local_experts; OLMoE, Qwen3-MoE: num_experts)
  // A key read as experts_key when that is absent (HF attribute_map; Qwen3MoeConfig in
  // transformers 5.x stores num_experts as num_local_experts); "": none.
  const char* experts_alias;
  int experts;                   // experts_key's default
  int top_k;                     // num_experts_per_tok's default
  bool renormalize;              // the top-k weights divided by their sum (Mixtral: always)
  const char* renormalize_key;   // non-empty: read from this key, default `renormalize` (norm_topk_prob)
  const char* intermediate_key;  // non-empty: the experts' width (moe_intermediate_size); "": intermediate_size
  int intermediate;              // intermediate_key's default
  // Qwen2-MoE, Qwen3-MoE: layer l is sparse iff l is not in mlp_only_layers, experts > 0 and
  // (l + 1) % decoder_sparse_step == 0; the others have the dense MLP of intermediate_size.
  // Otherwise every layer is sparse.
  bool sparse_step;
  // Qwen2-MoE: a shared expert beside the routed ones, of this key's width (default
  // shared_intermediate); "": none.
  const char* shared_intermediate_key = "";
  int shared_intermediate = 0;
};

// One family's fixed traits: one row of the table in families.cc.
struct Family {
  const char* model_type = "";
  NormNames norms;
  QkNorm qk_norm = QkNorm::kNone;
  bool qkv_bias_always = false;             // Qwen2: q, k, v biases whatever attention_bias says; o_proj none
  bool reads_attention_bias = false;        // attention_bias gives q, k, v and o_proj biases
  float norm_weight_offset = 0;             // RMSNorm multiplies by (offset + w): the Gemmas use 1
  bool scale_embeddings = false;            // the Gemmas: embeddings * sqrt(hidden)
  bool query_pre_attn_scalar = false;       // scores scaled by query_pre_attn_scalar^-0.5, not head_dim^-0.5
  bool softcaps = false;                    // reads attn_logit_softcapping and final_logit_softcapping
  LocalRope local_rope = LocalRope::kNone;  // the RoPE of sliding layers
  WindowRule window = WindowRule::kNone;
  int global_every = 0;                       // kLayerTypes without layer_types: layer i is global iff (i + 1) % n == 0
  bool reads_window_pattern = false;          // Gemma-3: sliding_window_pattern overrides global_every
  const char* activation_key = "hidden_act";  // "hidden_act" or "hidden_activation"
  const char* activation_default = "silu";
  FamilyDefaults defaults;
  // Families beyond the LLaMA layout (GPT-NeoX); the defaults are LLaMA's.
  const TensorNames* names = nullptr;  // null: TensorNames{}
  NormKind norm_kind = NormKind::kRms;
  const char* eps_key = "rms_norm_eps";  // "": fixed at defaults.rms_norm_eps (OPT's nn.LayerNorm default)
  bool mlp_bias = false;                 // biases on the MLP's projections
  bool attention_bias_default = false;   // when attention_bias is absent
  bool reads_parallel_residual = false;  // use_parallel_residual (default true)
  // Partial rotary: the default fraction of head_dim rotated, and the 4.x key that holds it
  // besides partial_rotary_factor (GPT-NeoX: rotary_pct); 0: partial rotary refused.
  double rotary_fraction = 0;
  const char* rotary_key = "";
  const char* theta_key = "";  // a 4.x alias of rope_theta (GPT-NeoX: rotary_emb_base)
  // GPT-2: no RoPE (positions come from position_embed); matrices stored as Conv1D [in, out];
  // tensor names under body_prefix ("transformer.", which some checkpoints omit).
  bool rope = true;
  bool conv1d = false;
  const char* body_prefix = "";
  // HF attribute_map: {standard key, the key this family's config.json writes} pairs, read as
  // the standard key when it is absent (GPT2Config: n_embd for hidden_size, ...); null-ended.
  const char* const (*config_aliases)[2] = nullptr;
  bool intermediate_4x = false;  // intermediate_size absent or null: 4 * hidden (GPT-2 n_inner)
  // Phi: a bias on every projection (o_proj's too) and on lm_head; attention and MLP always in
  // parallel from one input norm.
  bool o_bias_always = false;
  bool lm_head_bias = false;
  bool parallel_residual_always = false;
  // Non-null: a mixture of experts (MoeTraits).
  const MoeTraits* moe = nullptr;
  // Qwen2-MoE, Qwen3-MoE: use_sliding_window true is refused (transformers versions disagree on
  // which layers it windows; docs/model-families.md).
  bool refuses_sliding_window = false;
  // GPT-J: the rotated channels of each head as a count under this key (rotary_dim, default
  // rotary_dims), rotated in adjacent pairs (2i, 2i + 1) rather than halves (i, i + rotary / 2).
  const char* rotary_dims_key = "";
  int rotary_dims = 0;
  bool interleaved_rope = false;
  // SmolLM3: RoPE on the layers no_rope_layers marks 1, else all but every
  // no_rope_layer_interval-th (default 4); the others see no position at all (NoPE).
  bool reads_no_rope_layers = false;
  bool unscaled_scores = false;  // GPT-Neo: scores q.k, not divided by sqrt(head_dim)
  // OPT: token t reads row t + position_offset of position_embed, which holds
  // max_position_embeddings + position_offset rows (OPTLearnedPositionalEmbedding's offset 2).
  int position_offset = 0;
  // Qwen2-MoE: q, k, v biases as this key says (qkv_bias, default true); o_proj none.
  const char* qkv_bias_key = "";
  // Falcon: the kv heads, the norms and the residual from multi_query, new_decoder_architecture,
  // num_ln_in_parallel_attn and parallel_attn (RecipeInputs::norms, parallel_residual).
  bool reads_falcon_layout = false;
  // BLOOM, MPT: ALiBi position biases (alibi_slopes) and no RoPE.
  bool alibi = false;
  // MPT: LayerNorms without a bias (its Hub weights hold none).
  bool norm_bias = true;
  // MPT: its switches, the attention's under attn_config (config_json.cc).
  bool reads_mpt_config = false;
  // OLMo, OLMoE: clip_qkv (null or positive) clamps q, k and v (ModelRecipe::clip_qkv); MPT reads
  // attn_config.clip_qkv. Elsewhere the key is refused.
  bool reads_clip_qkv = false;
  // OLMo: LayerNorms with neither weight nor bias; the checkpoint holds no norm tensors, and the
  // norms read a unit weight made at load (WeightSlot::unit).
  bool norm_affine = true;
  // StarCoder2: this key (use_bias, default true) gives every projection a bias, the MLP's too.
  const char* linear_bias_key = "";
  // GPT-BigCode: multi_query (default true) shares one kv head and fuses the projection as
  // [q | k | v] (TensorNames::qkv_concat); false fuses it per head (TensorNames::qkv_per_group).
  bool reads_multi_query = false;
  // StableLM: use_qkv_bias (default false) and use_parallel_residual (default false), whose
  // parallel layer feeds the MLP from input_layernorm.
  bool reads_stablelm_layout = false;
  // Granite: embedding_multiplier, attention_multiplier (the score scale), residual_multiplier
  // and logits_scaling (ModelRecipe::residual_scale, logits_scale).
  bool reads_multipliers = false;
};

// The family of a config.json model_type (gemma3 multimodal is read as its gemma3_text
// tower); null when unsupported.
const Family* find_family(std::string_view model_type);
// "llama, mistral, ..." for messages.
std::string supported_model_types();

// Per-layer choices the forward pass follows.
struct LayerRecipe {
  int window = 0;           // 0: full causal; else query i sees keys j with 0 <= i - j < window
  int rope_table = -1;      // index into ModelRecipe::ropes; -1: no RoPE (learned positions, SmolLM3's NoPE layers)
  bool sparse_mlp = false;  // a mixture of experts (ModelRecipe::moe) in place of the dense MLP
};

// A mixture of experts' routing (HF MixtralSparseMoeBlock, OlmoeSparseMoeBlock,
// Qwen2MoeSparseMoeBlock, Qwen3MoeSparseMoeBlock, transformers 4.57): per token,
// p = softmax(router(h)) over the experts in fp32, the top_k largest kept (ties toward the lower
// expert index), divided by their sum when renormalize (Mixtral always; the others:
// norm_topk_prob); out = sum of p_e * expert_e(h), each expert a gated MLP of width
// `intermediate`; Qwen2-MoE adds sigmoid(shared_expert_gate(h)) * shared_expert(h).
struct MoeRecipe {
  int experts = 0;  // 0: dense MLPs everywhere
  int top_k = 0;
  bool renormalize = false;
  int intermediate = 0;         // each expert's width (Qwen2/3-MoE: moe_intermediate_size; else intermediate_size)
  int shared_intermediate = 0;  // the shared expert's width (shared_expert_intermediate_size); 0: none
};

// Everything the forward pass and the weight list need beyond the sizes.
struct ModelRecipe {
  std::string weight_prefix;  // "" or "language_model." (Gemma-3 multimodal checkpoints)
  std::string body_prefix;    // after weight_prefix, before every name but lm_head's ("transformer.")
  TensorNames names;
  bool conv1d = false;  // matrices stored [in, out] (GPT-2's Conv1D), transposed at load
  NormNames norms;
  NormKind norm_kind = NormKind::kRms;
  bool norm_bias = true;  // LayerNorms have a bias (Family::norm_bias)
  bool mlp_bias = false;
  // HF GPT-NeoX use_parallel_residual: x = x + attn(ln1(x)) + mlp(ln2(x)), both from the same x.
  bool parallel_residual = false;
  bool lm_head_bias = false;  // Phi: logits = lm_head(x) + bias
  int position_offset = 0;    // Family::position_offset
  int rotary_dim = 0;         // the first rotary_dim elements of each head are rotated (head_dim: all; 0: no RoPE)
  // GPT-J's rotate_every_two: q and k channels (2i, 2i + 1) of each head's rotated part are
  // one RoPE pair. q_proj's and k_proj's rows are reordered at load to (i, i + rotary_dim / 2),
  // rotate_half's pairs: each score q.k is the same sum, reordered, so the forward pass keeps
  // one RoPE.
  bool interleaved_rope = false;
  QkNorm qk_norm = QkNorm::kNone;
  bool qkv_bias = false;
  bool o_bias = false;
  float norm_weight_offset = 0;
  float embedding_scale = 1;  // sqrt(hidden) in fp32 for the Gemmas; Granite's embedding_multiplier
  // Granite: x = x + branch * residual_scale for the attention and the MLP branch;
  // logits = lm_head(norm(x)) * logits_scale (1 / logits_scaling).
  float residual_scale = 1;
  float logits_scale = 1;
  Activation activation = Activation::kSilu;
  float attn_scale = 1;  // score scale
  // [heads] ALiBi slopes (alibi_slopes; bf16 for Falcon): query i's score of key j gains
  // ops/attention_tiles.h alibi_bias; empty: none.
  std::vector<float> alibi_slopes;
  bool alibi_before_scale = false;  // RecipeInputs::alibi_before_scale
  float clip_qkv = 0;               // 0: none; else q, k, v clamped to [-clip_qkv, clip_qkv] before RoPE
  bool norm_affine = true;          // Family::norm_affine
  float attn_softcap = 0;           // 0: none; else scores = cap * tanh(scores / cap) before the mask
  float final_softcap = 0;          // 0: none; else logits = cap * tanh(logits / cap)
  std::vector<RopeSpec> ropes;      // distinct RoPE tables
  std::vector<LayerRecipe> layers;  // [layers]
  MoeRecipe moe;
  // The checkpoint holds the experts fused (TensorNames::fused_experts); set at load, where the
  // tensors' names tell.
  bool fused_experts = false;
};

// The config.json values a recipe is resolved from, already parsed and range-checked.
struct RecipeInputs {
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int head_dim = 0;
  bool attention_bias = false;
  bool qkv_bias = false;  // Family::qkv_bias_key
  Activation activation = Activation::kSilu;
  float query_pre_attn_scalar = 0;  // 0: absent
  float softmax_scale = 0;          // MPT's attn_config.softmax_scale; 0: absent (1 / sqrt(head_dim))
  float attn_softcap = 0;
  float final_softcap = 0;
  int sliding_window = 0;            // 0: none (null)
  bool use_sliding_window = false;   // Qwen
  int max_window_layers = 0;         // Qwen
  std::vector<bool> sliding_layers;  // layer_types when given ([layers], true: sliding_attention)
  std::vector<bool> rope_layers;     // [layers] false: no RoPE (SmolLM3's no_rope_layers); empty: RoPE everywhere
  int window_pattern = 0;            // sliding_window_pattern when read; 0: the family's
  bool parallel_residual = false;
  bool linear_bias = false;         // Falcon's bias: every projection has one
  bool alibi = false;               // ALiBi in place of RoPE (Family::alibi, Falcon's alibi)
  bool alibi_before_scale = false;  // Falcon: its bf16 ALiBi added to q.k before the score scale
  float clip_qkv = 0;               // Family::reads_clip_qkv; 0: null
  bool multi_query = false;         // Family::reads_multi_query
  // Family::reads_multipliers: embedding_multiplier, attention_multiplier, residual_multiplier,
  // logits_scaling (1 when absent).
  float embedding_multiplier = 1, attention_multiplier = 1, residual_multiplier = 1, logits_scaling = 1;
  std::optional<NormNames> norms;  // the config's choice of norm slots (Falcon); else the family's
  int rotary_dim = 0;              // channels of each head rotated (partial_rotary_factor, rotary_pct, rotary_dim)
  RopeSpec global_rope;            // rope_theta with rope_scaling
  RopeSpec local_rope;             // sliding layers' (Family::local_rope)
  bool multimodal = false;         // weights under language_model.
  int experts = 0;                 // MoeTraits::experts_key
  int top_k = 0;                   // num_experts_per_tok
  bool renormalize = false;        // MoeTraits::renormalize(_key)
  int expert_intermediate = 0;     // MoeTraits::intermediate_key, else intermediate_size
  int shared_intermediate = 0;     // MoeTraits::shared_intermediate_key; 0: no shared expert
  int sparse_step = 1;             // decoder_sparse_step (MoeTraits::sparse_step)
  std::vector<int> dense_layers;   // mlp_only_layers (MoeTraits::sparse_step)
};

ModelRecipe build_recipe(const Family& family, const RecipeInputs& in);

// ALiBi slopes of `heads` heads (HF BLOOM build_alibi_tensor, MPT gen_slopes with
// alibi_bias_max 8): for the largest power of two p <= heads, 2^(-8k / p) for k = 1..p, then
// for the remaining heads 2^(-8k / (2p)) for k = 1, 3, 5, ...; computed in double, rounded once
// to float.
std::vector<float> alibi_slopes(int heads);

// The window every layer shares; 0 when some layer attends globally or layers differ.
int uniform_window(const ModelRecipe& recipe);

}  // namespace attngeom
