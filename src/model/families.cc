// The table of every supported family's traits (recipe.h Family), one row each, and its lookup
// by model_type. build_recipe (recipe.cc) turns a row and a config into the forward pass's recipe.
#include <string>
#include <string_view>

#include "model/recipe.h"

namespace attngeom {
namespace {

// Where each family puts its RMSNorms (HF *DecoderLayer.forward).
//   pre-norm  (LLaMA, Mistral, Gemma, Qwen2/3): x += attn(norm(x)); x += mlp(norm(x))
//   sandwich  (Gemma-2/3): x += norm(attn(norm(x))); x += norm(mlp(norm(x)))
//   post-norm (OLMo-2): x += norm(attn(x)); x += norm(mlp(x))
constexpr NormNames kPreNorm{"input_layernorm.weight", "", "post_attention_layernorm.weight", ""};
constexpr NormNames kSandwich{"input_layernorm.weight", "post_attention_layernorm.weight",
                              "pre_feedforward_layernorm.weight", "post_feedforward_layernorm.weight"};
constexpr NormNames kPostNorm{"", "post_attention_layernorm.weight", "", "post_feedforward_layernorm.weight"};

// GPT-NeoX (Pythia), transformers 4.57 modeling_gpt_neox.py: GPTNeoXForCausalLM's gpt_neox.*
// and embed_out, a fused per-head query_key_value, a non-gated MLP.
// clang-format off
constexpr TensorNames kNeoXNames{.embed = "gpt_neox.embed_in.weight", .final_norm = "gpt_neox.final_layer_norm",
    .lm_head = "embed_out.weight", .layers = "gpt_neox.layers.", .q = "", .k = "", .v = "", .o = "attention.dense",
    .qkv_per_group = "attention.query_key_value", .gate = "", .up = "mlp.dense_h_to_4h", .down = "mlp.dense_4h_to_h"};
// clang-format on
// GPT-2, transformers 4.57 modeling_gpt2.py: GPT2LMHeadModel's transformer.* (body_prefix),
// Conv1D projections, c_attn fused as [q | k | v], learned positions wpe, tied lm_head.
// clang-format off
constexpr TensorNames kGpt2Names{.embed = "wte.weight", .final_norm = "ln_f", .lm_head = "lm_head.weight",
    .layers = "h.", .q = "", .k = "", .v = "", .o = "attn.c_proj", .qkv_concat = "attn.c_attn",
    .position_embed = "wpe.weight", .gate = "", .up = "mlp.c_fc", .down = "mlp.c_proj"};
// clang-format on
constexpr const char* kGpt2Aliases[][2] = {
    {"hidden_size", "n_embd"},         {"num_hidden_layers", "n_layer"},
    {"num_attention_heads", "n_head"}, {"max_position_embeddings", "n_positions"},
    {"intermediate_size", "n_inner"},  {nullptr, nullptr}};
constexpr NormNames kGpt2Norms{"ln_1.weight", "", "ln_2.weight", ""};
// GPT-Neo, transformers 4.57 modeling_gpt_neo.py: GPT-2's layout with nn.Linear projections, q/k/v
// without biases under attn.attention, out_proj with one.
// clang-format off
constexpr TensorNames kGptNeoNames{.embed = "wte.weight", .final_norm = "ln_f", .lm_head = "lm_head.weight",
    .layers = "h.", .q = "attn.attention.q_proj", .k = "attn.attention.k_proj", .v = "attn.attention.v_proj",
    .o = "attn.attention.out_proj", .position_embed = "wpe.weight", .gate = "", .up = "mlp.c_fc",
    .down = "mlp.c_proj"};
// clang-format on
constexpr const char* kGptNeoAliases[][2] = {
    {"num_hidden_layers", "num_layers"}, {"num_attention_heads", "num_heads"}, {nullptr, nullptr}};
// OPT, transformers 4.57 modeling_opt.py: OPTForCausalLM's model.decoder.* (body_prefix "model.",
// which the released checkpoints omit), learned positions offset by 2, q/k/v/out_proj and the
// fc1 / fc2 MLP with biases, self_attn_layer_norm before attention and final_layer_norm before
// the MLP, tied lm_head.
// clang-format off
constexpr TensorNames kOptNames{.embed = "decoder.embed_tokens.weight", .final_norm = "decoder.final_layer_norm",
    .lm_head = "lm_head.weight", .layers = "decoder.layers.", .o = "self_attn.out_proj",
    .position_embed = "decoder.embed_positions.weight", .gate = "", .up = "fc1", .down = "fc2"};
// clang-format on
constexpr NormNames kOptNorms{"self_attn_layer_norm.weight", "", "final_layer_norm.weight", ""};
constexpr const char* kOptAliases[][2] = {{"intermediate_size", "ffn_dim"}, {nullptr, nullptr}};
// Falcon, transformers 4.57 modeling_falcon.py: FalconForCausalLM's transformer.* (body_prefix),
// query_key_value fused per kv head, self_attention.dense, the non-gated mlp.dense_h_to_4h /
// dense_4h_to_h; its norm slots are the config's (config_json.cc).
// clang-format off
constexpr TensorNames kFalconNames{.embed = "word_embeddings.weight", .final_norm = "ln_f", .lm_head = "lm_head.weight",
    .layers = "h.", .q = "", .k = "", .v = "", .o = "self_attention.dense",
    .qkv_per_group = "self_attention.query_key_value", .gate = "", .up = "mlp.dense_h_to_4h",
    .down = "mlp.dense_4h_to_h"};
// clang-format on
// FalconConfig reads n_embed as hidden_size; the n_* names of the original RefinedWeb configs are
// read where the standard ones are absent.
constexpr const char* kFalconAliases[][2] = {
    {"hidden_size", "n_embed"},    {"num_hidden_layers", "n_layer"},         {"num_attention_heads", "n_head"},
    {"num_kv_heads", "n_head_kv"}, {"intermediate_size", "ffn_hidden_size"}, {nullptr, nullptr}};
// BLOOM, transformers 4.57 modeling_bloom.py: BloomForCausalLM's transformer.* (body_prefix, which
// the released checkpoints omit), a LayerNorm on the embeddings, query_key_value fused per head,
// self_attention.dense, the non-gated mlp.dense_h_to_4h / dense_4h_to_h, tied lm_head.
// clang-format off
constexpr TensorNames kBloomNames{.embed = "word_embeddings.weight", .final_norm = "ln_f", .lm_head = "lm_head.weight",
    .layers = "h.", .q = "", .k = "", .v = "", .o = "self_attention.dense",
    .qkv_per_group = "self_attention.query_key_value", .embed_norm = "word_embeddings_layernorm", .gate = "",
    .up = "mlp.dense_h_to_4h", .down = "mlp.dense_4h_to_h"};
// clang-format on
constexpr const char* kBloomAliases[][2] = {{"hidden_size", "n_embed"},
                                            {"num_hidden_layers", "n_layer"},
                                            {"num_attention_heads", "n_head"},
                                            {nullptr, nullptr}};
// MPT, transformers 4.57 modeling_mpt.py: MptForCausalLM's transformer.* (body_prefix), blocks of
// norm_1, attn.Wqkv fused as [q | k | v], attn.out_proj, norm_2 and the non-gated ffn.up_proj /
// down_proj, transformer.norm_f, tied lm_head; no biases anywhere.
// clang-format off
constexpr TensorNames kMptNames{.embed = "wte.weight", .final_norm = "norm_f", .lm_head = "lm_head.weight",
    .layers = "blocks.", .q = "", .k = "", .v = "", .o = "attn.out_proj", .qkv_concat = "attn.Wqkv", .gate = "",
    .up = "ffn.up_proj", .down = "ffn.down_proj"};
// clang-format on
constexpr NormNames kMptNorms{"norm_1.weight", "", "norm_2.weight", ""};
constexpr const char* kMptAliases[][2] = {{"hidden_size", "d_model"},
                                          {"num_hidden_layers", "n_layers"},
                                          {"num_attention_heads", "n_heads"},
                                          {"max_position_embeddings", "max_seq_len"},
                                          {nullptr, nullptr}};
// GPT-J, transformers 4.57 modeling_gptj.py: GPTJForCausalLM's transformer.* (body_prefix), q/k/v
// and out_proj without biases, mlp.fc_in / fc_out with them, one LayerNorm ln_1 feeding attention
// and MLP in parallel.
// clang-format off
constexpr TensorNames kGptjNames{.embed = "wte.weight", .final_norm = "ln_f", .lm_head = "lm_head.weight",
    .layers = "h.", .q = "attn.q_proj", .k = "attn.k_proj", .v = "attn.v_proj", .o = "attn.out_proj", .gate = "",
    .up = "mlp.fc_in", .down = "mlp.fc_out"};
// clang-format on
constexpr NormNames kGptjNorms{"ln_1.weight", "", "ln_1.weight", ""};
// Phi, transformers 4.57 modeling_phi.py: the MLP reads the attention's input norm (one
// LayerNorm per layer), self_attn.dense, mlp.fc1 / fc2, model.final_layernorm.
// Phi-3, transformers 4.57 modeling_phi3.py: fused qkv_proj [q | k | v] and gate_up_proj [gate | up].
// clang-format off
constexpr TensorNames kPhi3Names{.q = "", .k = "", .v = "", .qkv_concat = "self_attn.qkv_proj", .gate = "",
    .gate_up = "mlp.gate_up_proj", .up = "", .down = "mlp.down_proj"};
// clang-format on
constexpr NormNames kPhiNorms{"input_layernorm.weight", "", "input_layernorm.weight", ""};
// StarCoder2, transformers 4.57 modeling_starcoder2.py: LLaMA's names with the non-gated mlp.c_fc / c_proj.
constexpr TensorNames kStarcoder2Names{.gate = "", .up = "mlp.c_fc", .down = "mlp.c_proj"};
// clang-format off
constexpr TensorNames kPhiNames{.final_norm = "model.final_layernorm", .o = "self_attn.dense", .gate = "",
    .up = "mlp.fc1", .down = "mlp.fc2"};
// clang-format on

// Mixtral, transformers 4.57 modeling_mixtral.py: MixtralSparseMoeBlock under block_sparse_moe,
// its router `gate` and experts of w1 (gate), w3 (up), w2 (down).
// clang-format off
constexpr TensorNames kMixtralNames{.gate = "", .up = "", .down = "", .router = "block_sparse_moe.gate",
    .experts = "block_sparse_moe.experts."};
// clang-format on
// OLMoE (modeling_olmoe.py), Qwen2-MoE (modeling_qwen2_moe.py) and Qwen3-MoE (modeling_qwen3_moe.py),
// transformers 4.57: the sparse block under mlp, its router `gate` and experts of gate_proj,
// up_proj, down_proj. The Qwens' dense layers (mlp_only_layers, decoder_sparse_step) keep
// mlp.gate_proj / up_proj / down_proj; OLMoE has none.
// clang-format off
constexpr TensorNames kOlmoeNames{.gate = "", .up = "", .down = "", .router = "mlp.gate", .experts = "mlp.experts.",
    .expert_gate = "gate_proj", .expert_up = "up_proj", .expert_down = "down_proj"};
constexpr TensorNames kQwenMoeNames{.router = "mlp.gate", .experts = "mlp.experts.", .expert_gate = "gate_proj",
    .expert_up = "up_proj", .expert_down = "down_proj"};
// clang-format on

// MixtralConfig: num_local_experts 8, num_experts_per_tok 2, the top-2 weights always renormalised
// (router_jitter_noise acts in training only). OlmoeConfig: num_experts 64, top 8, norm_topk_prob
// false. Qwen3MoeConfig: num_experts 128, top 8, norm_topk_prob false (the released models write
// true), moe_intermediate_size 768, decoder_sparse_step 1, mlp_only_layers [].
constexpr MoeTraits kMixtralMoe{"num_local_experts", "", 8, 2, true, "", "", 0, false};
constexpr MoeTraits kOlmoeMoe{"num_experts", "", 64, 8, false, "norm_topk_prob", "", 0, false};
// Qwen2MoeConfig: num_experts 60, top 4, norm_topk_prob false, moe_intermediate_size 1408,
// shared_expert_intermediate_size 5632, decoder_sparse_step 1, mlp_only_layers [].
// clang-format off
constexpr MoeTraits kQwen2MoeMoe{"num_experts", "", 60, 4, false, "norm_topk_prob", "moe_intermediate_size", 1408, true,
                                 "shared_expert_intermediate_size", 5632};
// clang-format on
constexpr MoeTraits kQwen3MoeMoe{"num_experts",    "num_local_experts",     128, 8,   false,
                                 "norm_topk_prob", "moe_intermediate_size", 768, true};

constexpr QkNorm kNoQk = QkNorm::kNone, kPerHead = QkNorm::kPerHead, kWhole = QkNorm::kWholeProjection;
constexpr WindowRule kFull = WindowRule::kNone, kEvery = WindowRule::kEveryLayer, kQwen = WindowRule::kQwen,
                     kTypes = WindowRule::kLayerTypes, kNoPe = WindowRule::kNoPe, kLocal = WindowRule::kLocalLayers;
constexpr LocalRope kNoLocal = LocalRope::kNone, kOwnBase = LocalRope::kLocalBase, kUnscaled = LocalRope::kUnscaledBase;

// Every supported family side by side. Columns: norms, q/k norm, qkv bias always, reads
// attention_bias, norm (offset + w), embeddings * sqrt(hidden), query_pre_attn_scalar,
// soft-caps, local RoPE, window rule, global layer every n (and whether sliding_window_pattern
// overrides it), activation key and default;
// then the HF config defaults {kv_heads, head_dim, bos, tied, rope_theta, rms_norm_eps,
// sliding_window, query_pre_attn_scalar, attn_logit_softcapping, final_logit_softcapping,
// and for Gemma-3 the sizes vocab, hidden, intermediate, layers, heads}.
// gemma3 (multimodal) is read as gemma3_text from text_config (config_json.cc).
const Family kFamilies[] = {
    // clang-format off
    {"llama",       kPreNorm,  kNoQk,    false, true,  0, false, false, false, kNoLocal, kFull,  0, false, "hidden_act", "silu",
     {0,  0,   1, false, 10000.0,   1e-6, 4096, 256, 0, 0}},
    {"mistral",     kPreNorm,  kNoQk,    false, false, 0, false, false, false, kNoLocal, kEvery, 0, false, "hidden_act", "silu",
     {8,  0,   1, false, 10000.0,   1e-6, 4096, 256, 0, 0}},
    {"qwen2",       kPreNorm,  kNoQk,    true,  false, 0, false, false, false, kNoLocal, kQwen,  0, false, "hidden_act", "silu",
     {32, 0,   1, false, 10000.0,   1e-6, 4096, 256, 0, 0}},
    {"qwen3",       kPreNorm,  kPerHead, false, true,  0, false, false, false, kNoLocal, kQwen,  0, false, "hidden_act", "silu",
     {32, 128, 1, false, 10000.0,   1e-6, 4096, 256, 0, 0}},
    {"gemma",       kPreNorm,  kNoQk,    false, true,  1, true,  false, false, kNoLocal, kFull,  0, false, "hidden_activation",
     "gelu_pytorch_tanh", {16, 256, 2, true, 10000.0, 1e-6, 4096, 256, 0, 0}},
    {"gemma2",      kSandwich, kNoQk,    false, true,  1, true,  true,  true,  kNoLocal, kTypes, 2, false, "hidden_activation",
     "gelu_pytorch_tanh", {4,  256, 2, true, 10000.0, 1e-6, 4096, 256, 50.0, 30.0}},
    {"gemma3_text", kSandwich, kPerHead, false, true,  1, true,  true,  true,  kOwnBase, kTypes, 6, true,  "hidden_activation",
     "gelu_pytorch_tanh", {4,  256, 2, true, 1000000.0, 1e-6, 4096, 256, 0, 0, 262208, 2304, 9216, 26, 8}},
    {"olmo2",       kPostNorm, kWhole,   false, true,  0, false, false, false, kNoLocal, kFull,  0, false, "hidden_act", "silu",
     {0,  0,   1, false, 10000.0,   1e-5, 4096, 256, 0, 0}},
    // Olmo3Config: OLMo-2's layer; layer_types, by default three sliding layers (window 4096)
    // to one full; rope_scaling (YaRN in the released models) on full layers only.
    {"olmo3",       kPostNorm, kWhole,   false, true,  0, false, false, false, kUnscaled, kTypes, 4, false, "hidden_act",
     "silu", {0,  0,   1, false, 10000.0,   1e-5, 4096, 256, 0, 0}},
    // GPTNeoXConfig: LayerNorms with biases (layer_norm_eps), attention_bias default true, MLP
    // biases, use_parallel_residual, rotary_pct 0.25 of each head, rotary_emb_base 10000, bos 0.
    {"gpt_neox",    kPreNorm,  kNoQk,    false, true,  0, false, false, false, kNoLocal, kFull,  0, false, "hidden_act", "gelu",
     {0,  0,   0, false, 10000.0,   1e-5, 4096, 256, 0, 0},
     &kNeoXNames, NormKind::kLayer, "layer_norm_eps", true, true, true, 0.25, "rotary_pct", "rotary_emb_base"},
    // GPT2Config: n_embd, n_layer, n_head, n_positions, n_inner (null: 4 * n_embd), layer_norm_epsilon,
    // activation_function gelu_new, biases everywhere, no RoPE, tied, bos 50256.
    {"gpt2",        kGpt2Norms, kNoQk,   true,  false, 0, false, false, false, kNoLocal, kFull,  0, false, "activation_function",
     "gelu_new", {0,  0, 50256, true, 10000.0,  1e-5, 4096, 256, 0, 0},
     &kGpt2Names, NormKind::kLayer, "layer_norm_epsilon", true, false, false, 0, "", "", false, true, "transformer.",
     kGpt2Aliases, true, true},
    // GPTJConfig: GPT-2's keys (n_embd, n_inner null: 4 * n_embd, layer_norm_epsilon), gelu_new, one
    // LayerNorm feeding attention and MLP in parallel, lm_head's bias, RoPE (base 10000) on the
    // first rotary_dim (default 64) channels of each head in adjacent pairs, untied, bos 50256.
    {"gptj",        kGptjNorms, kNoQk,   false, false, 0, false, false, false, kNoLocal, kFull,  0, false, "activation_function",
     "gelu_new", {0,  0, 50256, false, 10000.0, 1e-5, 4096, 256, 0, 0},
     &kGptjNames, NormKind::kLayer, "layer_norm_epsilon", true, false, false, 0, "", "", true, false, "transformer.",
     kGpt2Aliases, true, false, true, true, nullptr, false, "rotary_dim", 64, true},
    // GPTNeoConfig: num_layers, num_heads, intermediate_size null: 4 * hidden, layer_norm_epsilon,
    // gelu_new, learned positions, scores unscaled, windows of window_size on the "local" layers,
    // tied, bos 50256.
    {"gpt_neo",     kGpt2Norms, kNoQk,   false, false, 0, false, false, false, kNoLocal, kLocal, 0, false, "activation_function",
     "gelu_new", {0,  0, 50256, true, 10000.0, 1e-5, 256, 256, 0, 0},
     &kGptNeoNames, NormKind::kLayer, "layer_norm_epsilon", true, false, false, 0, "", "", false, false, "transformer.",
     kGptNeoAliases, true, true, false, false, nullptr, false, "", 0, false, false, true},
    // OPTConfig: ffn_dim, activation_function relu, biases everywhere (enable_bias), pre-LN
    // (do_layer_norm_before), LayerNorms with eps 1e-5 from no key, learned positions offset by
    // 2, no RoPE, tied, bos 2.
    {"opt",         kOptNorms,  kNoQk,   true,  false, 0, false, false, false, kNoLocal, kFull,  0, false, "activation_function",
     "relu", {0,  0,   2, true, 10000.0,   1e-5, 4096, 256, 0, 0},
     &kOptNames, NormKind::kLayer, "", true, false, false, 0, "", "", false, false, "model.", kOptAliases, false, true,
     false, false, nullptr, false, "", 0, false, false, false, 2},
    // FalconConfig: LayerNorms with biases (layer_norm_epsilon), linear biases with bias (Falcon-RW),
    // RoPE on every channel or ALiBi with alibi (Falcon-RW), activation gelu, ffn_hidden_size null:
    // 4 * hidden, tied, bos 11; multi_query, new_decoder_architecture and parallel_attn choose the layout.
    {"falcon",      kPhiNorms, kNoQk,    false, false, 0, false, false, false, kNoLocal, kFull,  0, false, "activation",
     "gelu", {0,  0,  11, true, 10000.0,   1e-5, 4096, 256, 0, 0},
     &kFalconNames, NormKind::kLayer, "layer_norm_epsilon", false, false, true, 0, "", "", true, false, "transformer.",
     kFalconAliases, true, false, false, false, nullptr, false, "", 0, false, false, false, 0, "", true},
    // BloomConfig: n_embed, n_layer, n_head, layer_norm_epsilon, LayerNorms with biases (one on the
    // embeddings too), biases everywhere, bloom_gelu (the tanh form, no config key), MLP 4 * hidden,
    // ALiBi (bias max 8) and no RoPE, tied, bos 1.
    {"bloom",       kPreNorm,  kNoQk,    true,  false, 0, false, false, false, kNoLocal, kFull,  0, false, "",
     "gelu_new", {0,  0,   1, true, 10000.0,   1e-5, 4096, 256, 0, 0},
     &kBloomNames, NormKind::kLayer, "layer_norm_epsilon", true, false, false, 0, "", "", false, false, "transformer.",
     kBloomAliases, true, true, false, false, nullptr, false, "", 0, false, false, false, 0, "", false, true},
    // MptConfig: d_model, n_heads, n_layers, max_seq_len, layer_norm_epsilon, LayerNorms without
    // biases, no linear biases, exact GELU (no config key), MLP 4 * hidden, ALiBi and no RoPE,
    // attn_config's softmax_scale, tied.
    {"mpt",         kMptNorms, kNoQk,    false, false, 0, false, false, false, kNoLocal, kFull,  0, false, "",
     "gelu", {0,  0,   0, true, 10000.0,   1e-5, 4096, 256, 0, 0},
     &kMptNames, NormKind::kLayer, "layer_norm_epsilon", false, false, false, 0, "", "", false, false, "transformer.",
     kMptAliases, true, false, false, false, nullptr, false, "", 0, false, false, false, 0, "", false, true, false,
     true},
    // PhiConfig: one input LayerNorm feeding attention and MLP in parallel (x = attn + mlp + x),
    // q/k/v/dense/fc1/fc2 and lm_head biases, partial_rotary_factor 0.5, gelu_new, untied.
    {"phi",         kPhiNorms, kNoQk,    true,  false, 0, false, false, false, kNoLocal, kFull,  0, false, "hidden_act",
     "gelu_new", {0,  0,   1, false, 10000.0,   1e-5, 4096, 256, 0, 0},
     &kPhiNames, NormKind::kLayer, "layer_norm_eps", true, false, false, 0.5, "", "", true, false, "", nullptr, false,
     true, true, true},
    // Phi3Config: RMSNorm, no biases, silu, sliding_window (null: none) on every layer, RoPE
    // default or longrope, partial_rotary_factor (Phi-4-mini 0.75), untied.
    {"phi3",        kPreNorm,  kNoQk,    false, false, 0, false, false, false, kNoLocal, kEvery, 0, false, "hidden_act",
     "silu", {0,  0,   1, false, 10000.0,   1e-5, 0, 256, 0, 0},
     &kPhi3Names, NormKind::kRms, "rms_norm_eps", false, false, false, 1.0, "", ""},
    // MixtralConfig: Mistral's attention (sliding_window on every layer, default null), rope_theta
    // 1e6, rms_norm_eps 1e-5, num_local_experts 8 and num_experts_per_tok 2, the top-2 weights
    // renormalised; every layer sparse.
    {"mixtral",     kPreNorm,  kNoQk,    false, false, 0, false, false, false, kNoLocal, kEvery, 0, false, "hidden_act",
     "silu", {8,  0,   1, false, 1000000.0, 1e-5, 0, 256, 0, 0},
     &kMixtralNames, NormKind::kRms, "rms_norm_eps", false, false, false, 0, "", "", true, false, "", nullptr, false,
     false, false, false, &kMixtralMoe},
    // OlmoeConfig: LLaMA's pre-norm layer with OLMo-2's q/k RMSNorm over the whole projection
    // (after the biases of attention_bias, before RoPE), rms_norm_eps 1e-5, no window; every
    // layer sparse, the top-k weights renormalised only with norm_topk_prob; clip_qkv.
    {.model_type = "olmoe", .norms = kPreNorm, .qk_norm = kWhole, .reads_attention_bias = true, .local_rope = kNoLocal,
     .window = kFull, .activation_key = "hidden_act", .activation_default = "silu",
     .defaults = {0, 0, 1, false, 10000.0, 1e-5, 4096, 256, 0, 0}, .names = &kOlmoeNames, .eps_key = "rms_norm_eps",
     .moe = &kOlmoeMoe, .reads_clip_qkv = true},
    // Qwen3MoeConfig: Qwen3's attention (per-head q/k RMSNorm, head_dim explicit, else hidden /
    // heads), kv_heads 4, rms_norm_eps 1e-6; sparse and dense layers by decoder_sparse_step and
    // mlp_only_layers; use_sliding_window true refused.
    {"qwen3_moe",   kPreNorm,  kPerHead, false, true,  0, false, false, false, kNoLocal, kFull,  0, false, "hidden_act",
     "silu", {4,  0,   1, false, 10000.0,   1e-6, 4096, 256, 0, 0},
     &kQwenMoeNames, NormKind::kRms, "rms_norm_eps", false, false, false, 0, "", "", true, false, "", nullptr, false,
     false, false, false, &kQwen3MoeMoe, true},
    // Qwen2MoeConfig: Qwen2's attention (q, k, v biases unless qkv_bias is false), kv_heads 16,
    // rms_norm_eps 1e-6; sparse layers (with the shared expert) and dense ones by
    // decoder_sparse_step and mlp_only_layers; use_sliding_window true refused.
    {"qwen2_moe",   kPreNorm,  kNoQk,    false, false, 0, false, false, false, kNoLocal, kFull,  0, false, "hidden_act",
     "silu", {16, 0,   1, false, 10000.0,   1e-6, 4096, 256, 0, 0},
     &kQwenMoeNames, NormKind::kRms, "rms_norm_eps", false, false, false, 0, "", "", true, false, "", nullptr, false,
     false, false, false, &kQwen2MoeMoe, true, "", 0, false, false, false, 0, "qkv_bias"},
    // SmolLM3Config: LLaMA's layer, GQA 4 kv heads, rope_theta 2e6, tied, bos 128000; NoPE on every
    // fourth layer (no_rope_layers); windows only with use_sliding_window, on the NoPE layers.
    {"smollm3",     kPreNorm,  kNoQk,    false, true,  0, false, false, false, kNoLocal, kNoPe,  0, false, "hidden_act",
     "silu", {4,  0, 128000, true, 2000000.0, 1e-6, 0, 256, 0, 0},
     nullptr, NormKind::kRms, "rms_norm_eps", false, false, false, 0, "", "", true, false, "", nullptr, false, false,
     false, false, nullptr, false, "", 0, false, true},
    // OlmoConfig: LLaMA's layer with LayerNorms of neither weight nor bias at eps 1e-5 (no key),
    // attention_bias, clip_qkv, untied; bos_token_id None (0 here: GPT-NeoX's <|endoftext|>).
    {.model_type = "olmo", .norms = kPreNorm, .qk_norm = kNoQk, .reads_attention_bias = true, .local_rope = kNoLocal,
     .window = kFull, .activation_key = "hidden_act", .activation_default = "silu",
     .defaults = {0, 0, 0, false, 10000.0, 1e-5, 4096, 256, 0, 0}, .norm_kind = NormKind::kLayer, .eps_key = "",
     .norm_bias = false, .reads_clip_qkv = true, .norm_affine = false},
    // Starcoder2Config: LayerNorms with biases (norm_epsilon), every projection and the non-gated
    // MLP biased with use_bias, gelu_pytorch_tanh, kv_heads 2, sliding_window (null: none) on every
    // layer, tied, bos 50256.
    {.model_type = "starcoder2", .norms = kPreNorm, .qk_norm = kNoQk, .local_rope = kNoLocal, .window = kEvery,
     .activation_key = "hidden_act", .activation_default = "gelu_pytorch_tanh",
     .defaults = {2, 0, 50256, true, 10000.0, 1e-5, 0, 256, 0, 0}, .names = &kStarcoder2Names,
     .norm_kind = NormKind::kLayer, .eps_key = "norm_epsilon", .linear_bias_key = "use_bias"},
    // GPTBigCodeConfig: GPT-2's keys and layer with nn.Linear projections, c_attn fused by
    // multi_query (default true), gelu_pytorch_tanh, biases everywhere, learned positions, tied,
    // bos 50256.
    {.model_type = "gpt_bigcode", .norms = kGpt2Norms, .qk_norm = kNoQk, .qkv_bias_always = true,
     .local_rope = kNoLocal, .window = kFull, .activation_key = "activation_function",
     .activation_default = "gelu_pytorch_tanh", .defaults = {0, 0, 50256, true, 10000.0, 1e-5, 4096, 256, 0, 0},
     .names = &kGpt2Names, .norm_kind = NormKind::kLayer, .eps_key = "layer_norm_epsilon", .mlp_bias = true,
     .rope = false, .body_prefix = "transformer.", .config_aliases = kGpt2Aliases, .intermediate_4x = true,
     .o_bias_always = true, .reads_multi_query = true},
    // StableLmConfig: LayerNorms with biases (layer_norm_eps), q/k/v biases with use_qkv_bias,
    // partial_rotary_factor 0.25, sequential unless use_parallel_residual, untied, bos 0, kv_heads 32.
    {.model_type = "stablelm", .norms = kPreNorm, .qk_norm = kNoQk, .local_rope = kNoLocal, .window = kFull,
     .activation_key = "hidden_act", .activation_default = "silu",
     .defaults = {32, 0, 0, false, 10000.0, 1e-5, 4096, 256, 0, 0}, .norm_kind = NormKind::kLayer,
     .eps_key = "layer_norm_eps", .reads_parallel_residual = true, .rotary_fraction = 0.25,
     .reads_stablelm_layout = true},
    // GraniteConfig: LLaMA's layer with embedding, attention, residual and logits multipliers
    // (1 by default), rms_norm_eps 1e-6, untied.
    {.model_type = "granite", .norms = kPreNorm, .qk_norm = kNoQk, .reads_attention_bias = true, .local_rope = kNoLocal,
     .window = kFull, .activation_key = "hidden_act", .activation_default = "silu",
     .defaults = {0, 0, 1, false, 10000.0, 1e-6, 4096, 256, 0, 0}, .reads_multipliers = true},
    // clang-format on
};

}  // namespace

const Family* find_family(std::string_view model_type) {
  for (const Family& f : kFamilies) {
    if (model_type == f.model_type) return &f;
  }
  return nullptr;
}

std::string supported_model_types() {
  std::string out;
  for (const Family& f : kFamilies) out += std::string(out.empty() ? "" : ", ") + f.model_type;
  return out + ", gemma3";
}

}  // namespace attngeom
