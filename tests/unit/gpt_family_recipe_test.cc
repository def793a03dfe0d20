// The recipes of the families with learned positions or fused projections of their own: GPT-Neo,
// OPT and Falcon, read from configs as their released checkpoints write them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "recipe_test_util.h"
#include "util/half.h"

namespace attngeom {
namespace {

// GPTNeoConfig as GPT-Neo-125M's config.json writes it: its own key names, attention_types and
// their expansion attention_layers, window_size on the "local" layers, scores unscaled.
TEST(Recipe, GptNeoWindowsItsLocalLayersAndLeavesScoresUnscaled) {
  const std::string neo =
      R"({"model_type":"gpt_neo","hidden_size":768,"num_layers":4,"num_heads":12,"vocab_size":50257,)"
      R"("max_position_embeddings":2048,"intermediate_size":null,"window_size":256,)"
      R"("attention_types":[[["global","local"],2]])";
  const ModelConfig c =
      parse_model_config(neo + R"(,"attention_layers":["global","local","global","local"]})", "config.json");
  EXPECT_EQ(windows(c), (std::vector<int>{0, 256, 0, 256}));
  EXPECT_EQ(c.layers, 4);
  EXPECT_EQ(c.heads, 12);
  EXPECT_EQ(c.intermediate, 4 * 768);
  EXPECT_EQ(c.recipe.attn_scale, 1.0f);
  EXPECT_EQ(c.recipe.rotary_dim, 0);
  EXPECT_TRUE(c.recipe.o_bias && c.recipe.mlp_bias);
  EXPECT_FALSE(c.recipe.qkv_bias);
  EXPECT_TRUE(c.tie_embeddings);
  EXPECT_EQ(c.bos_token_id, 50256);
  EXPECT_EQ(slot_of(c, 0, TensorRole::kOBias), "transformer.h.0.attn.attention.out_proj.bias 768");
  EXPECT_EQ(slot_of(c, -1, TensorRole::kPositionEmbed), "transformer.wpe.weight 2048x768");
  const auto message = [&](const std::string& extra) { return refusal(neo + extra + "}"); };
  EXPECT_EQ(message(""), "");  // attention_layers absent: attention_types expanded
  EXPECT_NE(message(R"(,"attention_layers":["local","local","global","local"])").find("field 'attention_layers'"),
            std::string::npos);
  EXPECT_NE(message(R"(,"attention_types":[[["global","local"],3]])").find("field 'attention_types'"),
            std::string::npos);
  EXPECT_NE(message(R"(,"attention_types":[[["global","sparse"],2]])").find("'sparse'"), std::string::npos);
}

// OPTConfig (facebook/opt-1.3b's keys): ffn_dim is the MLP width, relu, biases on every
// projection, LayerNorms at eps 1e-5 from no key, positions offset by 2 rows, tied, bos 2.
TEST(Recipe, OptReadsFfnDimAndOffsetsItsLearnedPositions) {
  const std::string opt =
      R"({"model_type":"opt","hidden_size":2048,"num_hidden_layers":2,"num_attention_heads":32,"ffn_dim":8192,)"
      R"("vocab_size":50272,"max_position_embeddings":2048,"activation_function":"relu","bos_token_id":2)";
  const ModelConfig c =
      parse_model_config(opt + R"(,"do_layer_norm_before":true,"word_embed_proj_dim":2048,"enable_bias":true,)"
                               R"("layer_norm_elementwise_affine":true,"_remove_final_layer_norm":false})",
                         "config.json");
  EXPECT_EQ(c.intermediate, 8192);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.recipe.activation, Activation::kRelu);
  EXPECT_EQ(c.rms_norm_eps, 1e-5f);
  EXPECT_EQ(c.recipe.rotary_dim, 0);
  EXPECT_EQ(c.recipe.position_offset, 2);
  EXPECT_TRUE(c.recipe.qkv_bias && c.recipe.o_bias && c.recipe.mlp_bias);
  EXPECT_TRUE(c.tie_embeddings);
  EXPECT_EQ(c.bos_token_id, 2);
  EXPECT_EQ(c.recipe.attn_scale, 0.125f);
  EXPECT_EQ(slot_of(c, -1, TensorRole::kPositionEmbed), "model.decoder.embed_positions.weight 2050x2048");
  EXPECT_EQ(slot_of(c, 1, TensorRole::kUpProj), "model.decoder.layers.1.fc1.weight 8192x2048");
  EXPECT_EQ(slot_of(c, 1, TensorRole::kMlpInputNormBias), "model.decoder.layers.1.final_layer_norm.bias 2048");
  EXPECT_EQ(slot_of(c, 0, TensorRole::kOBias), "model.decoder.layers.0.self_attn.out_proj.bias 2048");
  EXPECT_EQ(slot_of(c, -1, TensorRole::kFinalNormBias), "model.decoder.final_layer_norm.bias 2048");
  EXPECT_EQ(count_slots(c, TensorRole::kLmHead), 0);
  EXPECT_EQ(count_slots(c, TensorRole::kGateProj), 0);
  const auto message = [&](const std::string& extra) { return refusal(opt + extra + "}"); };
  // opt-350m's post-LN layer and projected embeddings, layers without biases or norm weights.
  for (const std::string field : {"do_layer_norm_before", "enable_bias", "layer_norm_elementwise_affine"}) {
    EXPECT_NE(message(",\"" + field + "\":false").find("field '" + field + "'"), std::string::npos) << field;
  }
  EXPECT_NE(message(R"(,"word_embed_proj_dim":512)").find("field 'word_embed_proj_dim'"), std::string::npos);
  EXPECT_NE(message(R"(,"_remove_final_layer_norm":true)").find("field '_remove_final_layer_norm'"), std::string::npos);
}

// FalconConfig's layouts: Falcon-7B's one kv head and one norm feeding attention and MLP in
// parallel, Falcon-40B's grouped kv heads with ln_attn and ln_mlp, the sequential layer, and
// Falcon-RW's; the fused query_key_value holds each kv group's query heads, then its k and v.
TEST(Recipe, FalconReadsItsLayoutFromMultiQueryAndTheNewDecoderArchitecture) {
  const std::string falcon =
      R"({"model_type":"falcon","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":8,"vocab_size":100)";
  const ModelConfig seven_b = parse_model_config(falcon + "}", "config.json");
  EXPECT_EQ(seven_b.kv_heads, 1);
  EXPECT_EQ(seven_b.head_dim, 8);
  EXPECT_EQ(seven_b.intermediate, 256);
  EXPECT_TRUE(seven_b.recipe.parallel_residual);
  EXPECT_EQ(seven_b.recipe.activation, Activation::kGeluErf);
  EXPECT_EQ(seven_b.recipe.rotary_dim, 8);
  EXPECT_TRUE(seven_b.tie_embeddings);
  EXPECT_EQ(seven_b.bos_token_id, 11);
  EXPECT_FALSE(seven_b.recipe.qkv_bias || seven_b.recipe.o_bias || seven_b.recipe.mlp_bias);
  EXPECT_EQ(slot_of(seven_b, 1, TensorRole::kQkvProj), "transformer.h.1.self_attention.query_key_value.weight 80x64");
  EXPECT_EQ(slot_of(seven_b, 1, TensorRole::kMlpInputNorm), "transformer.h.1.input_layernorm.weight 64");
  EXPECT_EQ(slot_of(seven_b, 0, TensorRole::kUpProj), "transformer.h.0.mlp.dense_h_to_4h.weight 256x64");
  const ModelConfig forty_b = parse_model_config(
      falcon + R"(,"new_decoder_architecture":true,"num_kv_heads":2,"ffn_hidden_size":96})", "config.json");
  EXPECT_EQ(forty_b.kv_heads, 2);
  EXPECT_EQ(forty_b.intermediate, 96);
  EXPECT_TRUE(forty_b.recipe.parallel_residual);
  EXPECT_EQ(slot_of(forty_b, 0, TensorRole::kQkvProj), "transformer.h.0.self_attention.query_key_value.weight 96x64");
  EXPECT_EQ(slot_of(forty_b, 0, TensorRole::kAttnInputNorm), "transformer.h.0.ln_attn.weight 64");
  EXPECT_EQ(slot_of(forty_b, 0, TensorRole::kMlpInputNormBias), "transformer.h.0.ln_mlp.bias 64");
  const ModelConfig one_norm = parse_model_config(
      falcon + R"(,"new_decoder_architecture":true,"num_kv_heads":4,"num_ln_in_parallel_attn":1})", "config.json");
  EXPECT_EQ(slot_of(one_norm, 0, TensorRole::kMlpInputNorm), "transformer.h.0.input_layernorm.weight 64");
  const ModelConfig sequential =
      parse_model_config(falcon + R"(,"multi_query":false,"parallel_attn":false})", "config.json");
  EXPECT_EQ(sequential.kv_heads, 8);
  EXPECT_FALSE(sequential.recipe.parallel_residual);
  EXPECT_EQ(slot_of(sequential, 0, TensorRole::kMlpInputNorm), "transformer.h.0.post_attention_layernorm.weight 64");
  EXPECT_EQ(parse_model_config(R"({"model_type":"falcon","hidden_size":64,"n_layer":3,"n_head":8,"vocab_size":100})",
                               "config.json")
                .layers,
            3);
  // Falcon-RW (tiiuae/falcon-rw-1b): the sequential layer with biases on every projection, and
  // ALiBi with bf16 slopes added to q.k before the scale; no RoPE.
  const ModelConfig rw = parse_model_config(
      falcon + R"(,"multi_query":false,"parallel_attn":false,"alibi":true,"bias":true})", "config.json");
  EXPECT_TRUE(rw.recipe.qkv_bias && rw.recipe.o_bias && rw.recipe.mlp_bias);
  EXPECT_EQ(rw.recipe.rotary_dim, 0);
  EXPECT_TRUE(rw.recipe.ropes.empty());
  EXPECT_EQ(rope_tables(rw), (std::vector<int>{-1, -1}));
  std::vector<float> rounded = alibi_slopes(8);
  for (float& slope : rounded) slope = bf16_to_f32(f32_to_bf16(slope));
  EXPECT_EQ(rw.recipe.alibi_slopes, rounded);
  EXPECT_TRUE(rw.recipe.alibi_before_scale);
  EXPECT_EQ(slot_of(rw, 1, TensorRole::kDownBias), "transformer.h.1.mlp.dense_4h_to_h.bias 64");
  EXPECT_EQ(slot_of(rw, 1, TensorRole::kQkvBias), "transformer.h.1.self_attention.query_key_value.bias 192");
  EXPECT_TRUE(seven_b.recipe.alibi_slopes.empty());
  const auto message = [&](const std::string& extra) { return refusal(falcon + extra + "}"); };
  EXPECT_NE(message(R"(,"multi_query":false,"num_kv_heads":2)").find("field 'num_kv_heads'"), std::string::npos);
  EXPECT_NE(message(R"(,"new_decoder_architecture":true,"parallel_attn":false)").find("field 'parallel_attn'"),
            std::string::npos);
  EXPECT_NE(message(R"(,"num_ln_in_parallel_attn":2)").find("field 'num_ln_in_parallel_attn'"), std::string::npos);
  EXPECT_NE(message(R"(,"new_decoder_architecture":true,"num_ln_in_parallel_attn":3)").find("num_ln_in_parallel_attn"),
            std::string::npos);
}

}  // namespace
}  // namespace attngeom
