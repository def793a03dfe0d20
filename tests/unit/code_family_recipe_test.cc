// OLMo-1, StarCoder2, GPT-BigCode, StableLM and Granite, and clip_qkv wherever a family reads it:
// their recipes and tensor lists from configs as their released checkpoints write them.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "recipe_test_util.h"

namespace attngeom {
namespace {

// OlmoConfig as allenai/OLMo-7B-0424-hf's config.json writes it, at small sizes.
const std::string kOlmo =
    R"({"model_type":"olmo","hidden_size":64,"intermediate_size":128,"num_attention_heads":4,)"
    R"("num_key_value_heads":4,"num_hidden_layers":2,"vocab_size":50304,"max_position_embeddings":4096,)"
    R"("rope_theta":10000.0,"rope_scaling":null,"attention_bias":false,"bos_token_id":null,"eos_token_id":50279,)"
    R"("pad_token_id":1,"hidden_act":"silu","tie_word_embeddings":false)";

TEST(Recipe, OlmoNormsHaveNoTensorsAndClampQkv) {
  const ModelConfig c = parse_model_config(kOlmo + R"(,"clip_qkv":8.0})", "config.json");
  EXPECT_EQ(c.recipe.norm_kind, NormKind::kLayer);
  EXPECT_FALSE(c.recipe.norm_affine);
  EXPECT_FLOAT_EQ(c.rms_norm_eps, 1e-5f);  // OlmoLayerNorm's fixed eps
  EXPECT_EQ(c.recipe.clip_qkv, 8.0f);
  EXPECT_EQ(c.bos_token_id, 0);
  EXPECT_FALSE(c.tie_embeddings);
  EXPECT_FALSE(c.recipe.qkv_bias || c.recipe.o_bias || c.recipe.mlp_bias);
  // Every norm slot (two per layer and the final one) is made at load; no bias beside any.
  int units = 0;
  for (const WeightSlot& slot : weight_slots(c)) {
    units += slot.unit;
    const bool norm = slot.role == TensorRole::kAttnInputNorm || slot.role == TensorRole::kMlpInputNorm ||
                      slot.role == TensorRole::kFinalNorm;
    EXPECT_EQ(slot.unit, norm) << slot.name;
  }
  EXPECT_EQ(units, 5);
  EXPECT_EQ(count_slots(c, TensorRole::kAttnInputNormBias) + count_slots(c, TensorRole::kFinalNormBias), 0);
  EXPECT_EQ(slot_of(c, 1, TensorRole::kGateProj), "model.layers.1.mlp.gate_proj.weight 128x64");
  // OLMo-1B-hf: no clamp, tied, attention biases.
  const ModelConfig plain = parse_model_config(
      kOlmo + R"(,"clip_qkv":null,"tie_word_embeddings":true,"attention_bias":true,"eps":1e-3})", "config.json");
  EXPECT_EQ(plain.recipe.clip_qkv, 0.0f);
  EXPECT_TRUE(plain.tie_embeddings && plain.recipe.qkv_bias && plain.recipe.o_bias);
  EXPECT_FLOAT_EQ(plain.rms_norm_eps, 1e-5f);
  // OlmoAttention clamps whenever clip_qkv is not None: 0 would zero q, k and v.
  for (const std::string clip : {"-1", "0"}) {
    EXPECT_NE(refusal(kOlmo + R"(,"clip_qkv":)" + clip + "}").find("field 'clip_qkv' must be a positive number"),
              std::string::npos);
  }
}

TEST(Recipe, UnitWeightIsOnesOfTheSlotsWidth) {
  const ModelConfig c = parse_model_config(kOlmo + "}", "config.json");
  std::vector<std::shared_ptr<const std::vector<std::byte>>> derived;
  for (const WeightSlot& slot : weight_slots(c)) {
    if (!slot.unit) continue;
    const TensorView ones = unit_weight(slot, derived);
    ASSERT_EQ(ones.dtype, DType::kF32);
    ASSERT_EQ(ones.rows, 1);
    ASSERT_EQ(ones.cols, 64);
    const auto* values = static_cast<const float*>(ones.data);
    EXPECT_EQ(std::vector<float>(values, values + ones.cols), std::vector<float>(64, 1.0f)) << slot.name;
  }
  EXPECT_EQ(derived.size(), 5u);
}

TEST(Recipe, ClipQkvIsReadByOlmoeAndRefusedElsewhere) {
  EXPECT_EQ(parse("olmoe", 2, R"(,"clip_qkv":2.5)").recipe.clip_qkv, 2.5f);
  EXPECT_EQ(parse("olmoe", 2).recipe.clip_qkv, 0.0f);
  EXPECT_NE(refusal(R"({"model_type":"llama",)" + sizes(2) + R"(,"clip_qkv":8})")
                .find("field 'clip_qkv' must be null for llama"),
            std::string::npos);
}

// Starcoder2Config as bigcode/starcoder2-7b's config.json writes it, at small sizes.
const std::string kStarcoder2 =
    R"({"model_type":"starcoder2","hidden_size":64,"intermediate_size":256,"num_attention_heads":4,)"
    R"("num_key_value_heads":2,"num_hidden_layers":3,"vocab_size":49152,"max_position_embeddings":16384,)"
    R"("norm_epsilon":1e-05,"rope_theta":1000000,"hidden_act":"gelu_pytorch_tanh","sliding_window":4096,)"
    R"("bos_token_id":0,"eos_token_id":0)";

TEST(Recipe, Starcoder2HasLayerNormsBiasesAndAWindowOnEveryLayer) {
  const ModelConfig c = parse_model_config(kStarcoder2 + R"(,"use_bias":true})", "config.json");
  EXPECT_EQ(c.recipe.norm_kind, NormKind::kLayer);
  EXPECT_TRUE(c.recipe.norm_bias && c.recipe.norm_affine);
  EXPECT_TRUE(c.recipe.qkv_bias && c.recipe.o_bias && c.recipe.mlp_bias);
  EXPECT_EQ(c.recipe.activation, Activation::kGeluTanh);
  EXPECT_EQ(windows(c), (std::vector<int>{4096, 4096, 4096}));
  EXPECT_TRUE(c.tie_embeddings);
  EXPECT_EQ(c.kv_heads, 2);
  EXPECT_EQ(slot_of(c, 0, TensorRole::kUpProj), "model.layers.0.mlp.c_fc.weight 256x64");
  EXPECT_EQ(slot_of(c, 0, TensorRole::kUpBias), "model.layers.0.mlp.c_fc.bias 256");
  EXPECT_EQ(slot_of(c, 2, TensorRole::kDownBias), "model.layers.2.mlp.c_proj.bias 64");
  EXPECT_EQ(slot_of(c, 0, TensorRole::kOBias), "model.layers.0.self_attn.o_proj.bias 64");
  EXPECT_EQ(slot_of(c, 1, TensorRole::kAttnInputNormBias), "model.layers.1.input_layernorm.bias 64");
  EXPECT_EQ(count_slots(c, TensorRole::kGateProj), 0);
  // Class defaults: use_bias true, sliding_window null.
  const ModelConfig defaults = parse_model_config(
      R"({"model_type":"starcoder2","hidden_size":64,"intermediate_size":256,"num_attention_heads":4,)"
      R"("num_hidden_layers":2,"vocab_size":49152,"bos_token_id":0})",
      "config.json");
  EXPECT_TRUE(defaults.recipe.qkv_bias && defaults.recipe.mlp_bias);
  EXPECT_EQ(windows(defaults), (std::vector<int>{0, 0}));
  EXPECT_EQ(defaults.kv_heads, 2);
  const ModelConfig plain = parse_model_config(kStarcoder2 + R"(,"use_bias":false})", "config.json");
  EXPECT_FALSE(plain.recipe.qkv_bias || plain.recipe.o_bias || plain.recipe.mlp_bias);
  EXPECT_EQ(count_names(plain, ".bias"), 7);  // the LayerNorms' only: two per layer and the final one
}

// GPTBigCodeConfig as bigcode/starcoderbase-1b's config.json writes it, at small sizes.
const std::string kBigCode =
    R"({"model_type":"gpt_bigcode","n_embd":64,"n_head":4,"n_layer":2,"n_positions":8192,"n_inner":null,)"
    R"("vocab_size":49152,"activation_function":"gelu_pytorch_tanh","layer_norm_epsilon":1e-05,)"
    R"("scale_attn_weights":true,"attention_softmax_in_fp32":true,"scale_attention_softmax_in_fp32":true,)"
    R"("bos_token_id":0,"eos_token_id":0)";

TEST(Recipe, GptBigCodeFusesItsProjectionByMultiQuery) {
  const ModelConfig mqa = parse_model_config(kBigCode + "}", "config.json");
  EXPECT_EQ(mqa.kv_heads, 1);
  EXPECT_EQ(mqa.head_dim, 16);
  EXPECT_EQ(mqa.intermediate, 256);
  EXPECT_EQ(mqa.max_positions, 8192);
  EXPECT_FALSE(mqa.recipe.conv1d);
  EXPECT_EQ(rope_tables(mqa), (std::vector<int>{-1, -1}));
  EXPECT_EQ(mqa.recipe.activation, Activation::kGeluTanh);
  EXPECT_EQ(mqa.recipe.attn_scale, 0.25f);
  EXPECT_TRUE(mqa.recipe.qkv_bias && mqa.recipe.o_bias && mqa.recipe.mlp_bias);
  EXPECT_TRUE(mqa.tie_embeddings);
  EXPECT_STREQ(mqa.recipe.names.qkv_concat, "attn.c_attn");
  EXPECT_STREQ(mqa.recipe.names.qkv_per_group, "");
  // nn.Linear: [hidden + 2 head_dim, hidden], not GPT-2's Conv1D [in, out].
  EXPECT_EQ(slot_of(mqa, 0, TensorRole::kQkvProj), "transformer.h.0.attn.c_attn.weight 96x64");
  EXPECT_EQ(slot_of(mqa, 1, TensorRole::kDownProj), "transformer.h.1.mlp.c_proj.weight 64x256");
  EXPECT_EQ(slot_of(mqa, -1, TensorRole::kPositionEmbed), "transformer.wpe.weight 8192x64");

  const ModelConfig mha = parse_model_config(kBigCode + R"(,"multi_query":false})", "config.json");
  EXPECT_EQ(mha.kv_heads, 4);
  EXPECT_STREQ(mha.recipe.names.qkv_per_group, "attn.c_attn");
  EXPECT_STREQ(mha.recipe.names.qkv_concat, "");
  EXPECT_EQ(slot_of(mha, 0, TensorRole::kQkvProj), "transformer.h.0.attn.c_attn.weight 192x64");
  EXPECT_NE(refusal(kBigCode + R"(,"scale_attn_weights":false})").find("field 'scale_attn_weights' must be true"),
            std::string::npos);
}

// StableLmConfig as stabilityai/stablelm-2-1_6b's config.json writes it, at small sizes.
const std::string kStablelm =
    R"({"model_type":"stablelm","hidden_size":128,"intermediate_size":256,"num_attention_heads":4,)"
    R"("num_key_value_heads":4,"num_hidden_layers":2,"vocab_size":100352,"layer_norm_eps":1e-05,)"
    R"("partial_rotary_factor":0.25,"rope_theta":10000,"qk_layernorm":false,"bos_token_id":100257,)"
    R"("eos_token_id":100257,"tie_word_embeddings":false)";

TEST(Recipe, StablelmHasLayerNormsPartialRotaryAndOptionalParallelLayers) {
  const ModelConfig c = parse_model_config(kStablelm + R"(,"use_qkv_bias":true})", "config.json");
  EXPECT_EQ(c.recipe.norm_kind, NormKind::kLayer);
  EXPECT_TRUE(c.recipe.norm_bias);
  EXPECT_EQ(c.recipe.rotary_dim, 8);  // 0.25 of head_dim 32
  EXPECT_TRUE(c.recipe.qkv_bias);
  EXPECT_FALSE(c.recipe.o_bias || c.recipe.mlp_bias || c.recipe.parallel_residual);
  EXPECT_FALSE(c.tie_embeddings);
  EXPECT_EQ(slot_of(c, 0, TensorRole::kMlpInputNormBias), "model.layers.0.post_attention_layernorm.bias 128");
  EXPECT_EQ(slot_of(c, 1, TensorRole::kGateProj), "model.layers.1.mlp.gate_proj.weight 256x128");
  // Class defaults: no q/k/v biases, sequential.
  EXPECT_FALSE(parse_model_config(kStablelm + "}", "config.json").recipe.qkv_bias);
  // StableLM-2-12B's layer: attention and MLP both from input_layernorm.
  const ModelConfig parallel = parse_model_config(kStablelm + R"(,"use_parallel_residual":true})", "config.json");
  EXPECT_TRUE(parallel.recipe.parallel_residual);
  EXPECT_EQ(slot_of(parallel, 0, TensorRole::kMlpInputNorm), "model.layers.0.input_layernorm.weight 128");
  EXPECT_EQ(count_names(parallel, "post_attention_layernorm"), 0);
  EXPECT_NE(refusal(kStablelm + R"(,"qk_layernorm":true})").find("field 'qk_layernorm'"), std::string::npos);
  EXPECT_NE(refusal(kStablelm + R"(,"head_dim":16})").find("field 'head_dim' must be hidden_size"), std::string::npos);
  // StableLmConfig's num_key_value_heads defaults to 32, whatever num_attention_heads says.
  std::string unset_kv = kStablelm;
  const std::string kv_key = R"("num_key_value_heads":4,)";
  unset_kv.erase(unset_kv.find(kv_key), kv_key.size());
  EXPECT_NE(refusal(unset_kv + "}").find("num_key_value_heads' (32) must divide"), std::string::npos);
}

// GraniteConfig as ibm-granite/granite-3.1-8b-base's config.json writes it, at small sizes.
const std::string kGranite =
    R"({"model_type":"granite","hidden_size":64,"intermediate_size":128,"num_attention_heads":4,)"
    R"("num_key_value_heads":2,"num_hidden_layers":2,"vocab_size":49155,"rms_norm_eps":1e-05,)"
    R"("rope_theta":10000000.0,"attention_bias":false,"mlp_bias":false,"tie_word_embeddings":true,)"
    R"("bos_token_id":0,"eos_token_id":0)";

TEST(Recipe, GraniteReadsItsFourMultipliers) {
  const ModelConfig c = parse_model_config(kGranite + R"(,"embedding_multiplier":12.0,"attention_multiplier":)"
                                                      R"(0.0078125,"residual_multiplier":0.22,"logits_scaling":16.0})",
                                           "config.json");
  EXPECT_EQ(c.recipe.embedding_scale, 12.0f);
  EXPECT_EQ(c.recipe.attn_scale, 0.0078125f);
  EXPECT_EQ(c.recipe.residual_scale, 0.22f);
  EXPECT_EQ(c.recipe.logits_scale, 0.0625f);
  EXPECT_EQ(c.recipe.norm_kind, NormKind::kRms);
  EXPECT_TRUE(c.tie_embeddings);
  // Class defaults: every multiplier 1, so LLaMA's layer with a score scale of 1 (not 1 / sqrt(head_dim)).
  const ModelConfig plain = parse_model_config(kGranite + "}", "config.json");
  EXPECT_EQ(plain.recipe.embedding_scale, 1.0f);
  EXPECT_EQ(plain.recipe.attn_scale, 1.0f);
  EXPECT_EQ(plain.recipe.residual_scale, 1.0f);
  EXPECT_EQ(plain.recipe.logits_scale, 1.0f);
  EXPECT_NE(refusal(kGranite + R"(,"logits_scaling":0})").find("field 'logits_scaling' must be a positive number"),
            std::string::npos);
  EXPECT_NE(refusal(kGranite + R"(,"mlp_bias":true})").find("field 'mlp_bias'"), std::string::npos);
}

}  // namespace
}  // namespace attngeom
