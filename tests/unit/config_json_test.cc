#include "io/config_json.h"

#include <gtest/gtest.h>

#include <cmath>

#include "util/error.h"

namespace attngeom {
namespace {

std::string error_of(const std::string& json) {
  try {
    parse_model_config(json, "config.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(ConfigJson, MapsGemmaQuirksToFields) {
  const ModelConfig c = parse_model_config(
      R"({"model_type":"gemma","hidden_size":3072,"intermediate_size":24576,"num_hidden_layers":28,)"
      R"("num_attention_heads":16,"num_key_value_heads":16,"head_dim":256,"vocab_size":256000,)"
      R"("rms_norm_eps":1e-6,"rope_theta":10000.0,"bos_token_id":2,"hidden_activation":"gelu_pytorch_tanh"})",
      "config.json");
  EXPECT_EQ(c.model_type, "gemma");
  EXPECT_EQ(c.head_dim, 256);
  EXPECT_EQ(c.q_dim(), 4096);
  EXPECT_TRUE(c.tie_embeddings);
  EXPECT_EQ(c.recipe.norm_weight_offset, 1.0f);
  EXPECT_FLOAT_EQ(c.recipe.embedding_scale, std::sqrt(3072.0f));
  EXPECT_EQ(c.recipe.activation, Activation::kGeluTanh);
  EXPECT_EQ(c.bos_token_id, 2);
}

TEST(ConfigJson, MapsMistralWindowAndGqa) {
  const std::string base =
      R"({"model_type":"mistral","hidden_size":4096,"intermediate_size":14336,"num_hidden_layers":32,)"
      R"("num_attention_heads":32,"num_key_value_heads":8,"vocab_size":32000,"hidden_act":"silu")";
  const ModelConfig windowed = parse_model_config(base + R"(,"sliding_window":4096})", "config.json");
  EXPECT_EQ(windowed.sliding_window, 4096);
  EXPECT_EQ(windowed.group_size(), 4);
  EXPECT_EQ(windowed.kv_head_of(7), 1);
  EXPECT_EQ(windowed.head_dim, 128);
  EXPECT_FALSE(windowed.tie_embeddings);
  EXPECT_EQ(parse_model_config(base + R"(,"sliding_window":null})", "config.json").sliding_window, 0);
  EXPECT_EQ(parse_model_config(base + "}", "config.json").sliding_window, 4096);  // MistralConfig's default
}

TEST(ConfigJson, LlamaIgnoresASlidingWindowKeyAsHfDoes) {
  const ModelConfig c = parse_model_config(
      R"({"model_type":"llama","hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,"vocab_size":100,)"
      R"("num_attention_heads":4,"sliding_window":4})",
      "config.json");
  EXPECT_EQ(c.sliding_window, 0);
}

TEST(ConfigJson, OmittedKeysTakeEachArchitecturesHfDefaults) {
  const std::string sizes =
      R"("hidden_size":3072,"intermediate_size":256,"num_hidden_layers":2,"num_attention_heads":16,"vocab_size":300})";
  const ModelConfig gemma = parse_model_config(R"({"model_type":"gemma",)" + sizes, "config.json");
  EXPECT_EQ(gemma.head_dim, 256);
  EXPECT_EQ(gemma.kv_heads, 16);
  EXPECT_EQ(gemma.bos_token_id, 2);
  const ModelConfig mistral = parse_model_config(R"({"model_type":"mistral",)" + sizes, "config.json");
  EXPECT_EQ(mistral.head_dim, 192);
  EXPECT_EQ(mistral.kv_heads, 8);
  EXPECT_EQ(mistral.bos_token_id, 1);
  const ModelConfig llama = parse_model_config(R"({"model_type":"llama",)" + sizes, "config.json");
  EXPECT_EQ(llama.kv_heads, 16);
  EXPECT_EQ(llama.recipe.ropes.at(0).theta, 10000.0);
}

TEST(ConfigJson, ReadsRopeFromRopeScalingOrRopeParametersAndRefusesTheRest) {
  const std::string llama =
      R"({"model_type":"llama","hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,"vocab_size":100,)"
      R"("num_attention_heads":4)";
  const auto rope = [&](const std::string& extra) {
    const ModelConfig c = parse_model_config(llama + extra + "}", "config.json");
    EXPECT_EQ(c.recipe.ropes.size(), 1u);
    return c.recipe.ropes.at(0);
  };
  EXPECT_EQ(rope(R"(,"rope_parameters":{"rope_type":"default","rope_theta":1000000.0})").theta, 1e6);
  EXPECT_EQ(rope(R"(,"rope_theta":500000.0,"rope_parameters":{"rope_theta":500000.0})").theta, 5e5);
  EXPECT_EQ(rope(R"(,"rope_theta":500000.0,"rope_parameters":null)").theta, 5e5);
  const RopeSpec llama3 =
      rope(R"(,"rope_theta":500000.0,"rope_scaling":{"rope_type":"llama3","factor":8.0,"low_freq_factor":1.0,)"
           R"("high_freq_factor":4.0,"original_max_position_embeddings":8192})");
  EXPECT_EQ(llama3.type, RopeType::kLlama3);
  EXPECT_EQ(llama3.factor, 8.0);
  EXPECT_EQ(llama3.high_freq_factor, 4.0);
  EXPECT_EQ(llama3.original_max_positions, 8192.0);
  const RopeSpec linear = rope(R"(,"rope_parameters":{"type":"linear","factor":2.0})");
  EXPECT_EQ(linear.type, RopeType::kLinear);
  EXPECT_EQ(linear.factor, 2.0);
  EXPECT_EQ(rope(R"(,"rope_scaling":{"type":"linear","factor":4})").factor, 4.0);
  const auto refused = [&](const std::string& extra, const std::string& field) {
    const std::string message = error_of(llama + extra + "}");
    EXPECT_NE(message.find("field '" + field + "'"), std::string::npos) << extra << " -> " << message;
  };
  refused(R"(,"rope_parameters":{"rope_type":"llama3","rope_theta":500000.0,"factor":8.0})",
          "rope_parameters.low_freq_factor");
  refused(R"(,"rope_scaling":{"rope_type":"proportional","factor":4.0})", "rope_scaling.rope_type");
  refused(R"(,"rope_scaling":{"type":"dynamic","factor":4.0})", "rope_scaling.type");
  refused(R"(,"rope_scaling":{"rope_type":"linear"})", "rope_scaling.factor");
  refused(R"(,"rope_scaling":[1])", "rope_scaling");
  refused(R"(,"rope_parameters":{"rope_type":"default","partial_rotary_factor":0.5})",
          "rope_parameters.partial_rotary_factor");
  refused(R"(,"rope_theta":10000.0,"rope_parameters":{"rope_theta":1000000.0})", "rope_parameters.rope_theta");
  refused(R"(,"rope_parameters":{"full_attention":{"rope_type":"default"}})", "rope_parameters");
  refused(R"(,"rope_parameters":[1])", "rope_parameters");
  refused(R"(,"partial_rotary_factor":0.5)", "partial_rotary_factor");
  refused(R"(,"use_bidirectional_attention":true)", "use_bidirectional_attention");
  refused(R"(,"num_local_experts":8)", "num_local_experts");
  refused(R"(,"num_experts":60)", "num_experts");
}

// GPTNeoXConfig as transformers 4.x writes it (rotary_pct, rotary_emb_base) and as 5.x does
// (rope_parameters): the same recipe.
TEST(ConfigJson, ReadsGptNeoXIn4xAnd5xLayouts) {
  const std::string base =
      R"({"model_type":"gpt_neox","hidden_size":4096,"intermediate_size":16384,"num_hidden_layers":32,)"
      R"("num_attention_heads":32,"vocab_size":50432,"layer_norm_eps":1e-5,"hidden_act":"gelu")";
  const ModelConfig v4 =
      parse_model_config(base + R"(,"rotary_pct":0.25,"rotary_emb_base":20000,"use_parallel_residual":true})", "c");
  const ModelConfig v5 = parse_model_config(
      base + R"(,"rope_parameters":{"rope_type":"default","rope_theta":20000,"partial_rotary_factor":0.25}})", "c");
  for (const ModelConfig* c : {&v4, &v5}) {
    EXPECT_EQ(c->head_dim, 128);
    EXPECT_EQ(c->kv_heads, 32);
    EXPECT_EQ(c->recipe.rotary_dim, 32);
    EXPECT_EQ(c->recipe.norm_kind, NormKind::kLayer);
    EXPECT_TRUE(c->recipe.parallel_residual);
    EXPECT_TRUE(c->recipe.qkv_bias && c->recipe.o_bias && c->recipe.mlp_bias);
    EXPECT_EQ(c->recipe.activation, Activation::kGeluErf);
    EXPECT_EQ(c->bos_token_id, 0);
    EXPECT_FALSE(c->tie_embeddings);
    ASSERT_EQ(c->recipe.ropes.size(), 1u);
    EXPECT_EQ(c->recipe.ropes[0].theta, 20000.0);
  }
  const ModelConfig sequential = parse_model_config(base + R"(,"use_parallel_residual":false})", "c");
  EXPECT_FALSE(sequential.recipe.parallel_residual);
  EXPECT_EQ(sequential.recipe.rotary_dim, 32);  // GPTNeoXConfig's rotary_pct default, 0.25
  EXPECT_EQ(sequential.recipe.ropes[0].theta, 10000.0);
  EXPECT_NE(error_of(base + R"(,"rotary_pct":0.001})").find("'rotary_pct'"), std::string::npos);
  // LLaMA has no partial rotary: still refused there.
  EXPECT_NE(error_of(R"({"model_type":"llama","hidden_size":64,"intermediate_size":128,"num_hidden_layers":1,)"
                     R"("num_attention_heads":4,"vocab_size":10,"partial_rotary_factor":0.5})")
                .find("partial rotary"),
            std::string::npos);
}

// GPT2Config writes n_embd, n_layer, n_head, n_positions and n_inner (HF attribute_map).
TEST(ConfigJson, ReadsGpt2KeyNamesWithoutRope) {
  const std::string base =
      R"({"model_type":"gpt2","n_embd":1600,"n_layer":48,"n_head":25,"n_positions":1024,"vocab_size":50257)";
  const ModelConfig c = parse_model_config(base + R"(,"n_inner":null})", "c");
  EXPECT_EQ(c.hidden, 1600);
  EXPECT_EQ(c.layers, 48);
  EXPECT_EQ(c.heads, 25);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.intermediate, 6400);  // n_inner null: 4 * n_embd
  EXPECT_EQ(c.max_positions, 1024);
  EXPECT_EQ(c.recipe.rotary_dim, 0);
  EXPECT_TRUE(c.recipe.ropes.empty());
  EXPECT_TRUE(c.recipe.conv1d);
  EXPECT_TRUE(c.recipe.qkv_bias && c.recipe.o_bias && c.recipe.mlp_bias);
  EXPECT_EQ(c.recipe.activation, Activation::kGeluTanh);  // gelu_new
  EXPECT_TRUE(c.tie_embeddings);
  EXPECT_EQ(c.bos_token_id, 50256);
  EXPECT_EQ(parse_model_config(base + R"(,"n_inner":3000})", "c").intermediate, 3000);
  EXPECT_NE(error_of(base + R"(,"scale_attn_by_inverse_layer_idx":true})").find("'scale_attn_by_inverse_layer_idx'"),
            std::string::npos);
}

// PhiConfig (Phi-2): partial_rotary_factor at the top level (4.x) or in rope_parameters (5.x).
TEST(ConfigJson, ReadsPhiPartialRotaryAndParallelBlock) {
  const std::string base =
      R"({"model_type":"phi","hidden_size":2560,"intermediate_size":10240,"num_hidden_layers":32,)"
      R"("num_attention_heads":32,"num_key_value_heads":null,"vocab_size":51200,"layer_norm_eps":1e-5)";
  const ModelConfig v4 = parse_model_config(base + R"(,"partial_rotary_factor":0.4,"rope_theta":10000.0})", "c");
  const ModelConfig v5 = parse_model_config(
      base + R"(,"rope_parameters":{"rope_type":"default","rope_theta":10000.0,"partial_rotary_factor":0.4}})", "c");
  for (const ModelConfig* c : {&v4, &v5}) {
    EXPECT_EQ(c->head_dim, 80);
    EXPECT_EQ(c->kv_heads, 32);
    EXPECT_EQ(c->recipe.rotary_dim, 32);
    EXPECT_TRUE(c->recipe.parallel_residual);
    EXPECT_TRUE(c->recipe.qkv_bias && c->recipe.o_bias && c->recipe.mlp_bias && c->recipe.lm_head_bias);
    EXPECT_EQ(c->recipe.activation, Activation::kGeluTanh);
    EXPECT_STREQ(c->recipe.norms.mlp_input, c->recipe.norms.attn_input);  // one LayerNorm feeds both
  }
  EXPECT_EQ(parse_model_config(base + "}", "c").recipe.rotary_dim, 40);  // PhiConfig default 0.5
  EXPECT_NE(error_of(base + R"(,"qk_layernorm":true})").find("'qk_layernorm'"), std::string::npos);
}

// Phi3Config with longrope as Phi-3.5 / Phi-4-mini write it (4.x rope_scaling, the pretrained
// length at the top level) and as 5.x does (rope_parameters).
TEST(ConfigJson, ReadsPhi3LongRopeIn4xAnd5xLayouts) {
  const std::string base =
      R"({"model_type":"phi3","hidden_size":3072,"intermediate_size":8192,"num_hidden_layers":32,)"
      R"("num_attention_heads":24,"num_key_value_heads":8,"vocab_size":200064,"max_position_embeddings":131072,)"
      R"("partial_rotary_factor":0.75,"sliding_window":null,"rope_theta":10000.0)";
  std::string shorts, longs;
  for (int i = 0; i < 48; ++i) {
    if (i) {
      shorts += ',';
      longs += ',';
    }
    shorts += std::to_string(1.0 + i * 0.01);
    longs += std::to_string(1.0 + i * 0.5);
  }
  const std::string lists = R"("short_factor":[)" + shorts + R"(],"long_factor":[)" + longs + "]";
  const ModelConfig v4 = parse_model_config(
      base + R"(,"original_max_position_embeddings":4096,"rope_scaling":{"type":"longrope",)" + lists + "}}", "c");
  const ModelConfig v5 = parse_model_config(
      base +
          R"(,"rope_parameters":{"rope_type":"longrope","rope_theta":10000.0,"partial_rotary_factor":0.75,)"
          R"("original_max_position_embeddings":4096,)" +
          lists + "}}",
      "c");
  for (const ModelConfig* c : {&v4, &v5}) {
    EXPECT_EQ(c->head_dim, 128);
    EXPECT_EQ(c->recipe.rotary_dim, 96);
    EXPECT_EQ(c->sliding_window, 0);
    ASSERT_EQ(c->recipe.ropes.size(), 1u);
    const RopeSpec& rope = c->recipe.ropes[0];
    EXPECT_EQ(rope.type, RopeType::kLongRope);
    EXPECT_EQ(rope.original_max_positions, 4096.0);
    EXPECT_DOUBLE_EQ(rope.attention_factor, std::sqrt(1 + std::log(32.0) / std::log(4096.0)));
    EXPECT_EQ(rope.long_factor.size(), 48u);
  }
  EXPECT_EQ(v4.recipe.ropes, v5.recipe.ropes);
  EXPECT_NE(error_of(base + R"(,"rope_scaling":{"type":"longrope","short_factor":[1],"long_factor":[1]}})")
                .find("rotary_dim / 2 = 48"),
            std::string::npos);
}

// OlmoeConfig and Qwen3MoeConfig as transformers 4.x writes them (rope_theta) and 5.x
// (rope_parameters; Qwen3-MoE's expert count under num_local_experts) give one recipe.
TEST(ConfigJson, ReadsOlmoeAndQwen3MoeIn4xAnd5xLayouts) {
  const std::string olmoe =
      R"({"model_type":"olmoe","hidden_size":2048,"intermediate_size":1024,"num_hidden_layers":16,)"
      R"("num_attention_heads":16,"num_key_value_heads":16,"vocab_size":50304,"num_experts":64,)"
      R"("num_experts_per_tok":8,"norm_topk_prob":false,"clip_qkv":null,)";
  const ModelConfig o4 = parse_model_config(olmoe + R"("rope_theta":10000.0,"rope_scaling":null})", "c");
  const ModelConfig o5 =
      parse_model_config(olmoe + R"("rope_parameters":{"rope_type":"default","rope_theta":10000.0}})", "c");
  for (const ModelConfig* c : {&o4, &o5}) {
    EXPECT_EQ(c->head_dim, 128);
    EXPECT_EQ(c->recipe.moe.experts, 64);
    EXPECT_EQ(c->recipe.moe.top_k, 8);
    EXPECT_FALSE(c->recipe.moe.renormalize);
    EXPECT_EQ(c->recipe.moe.intermediate, 1024);
  }
  EXPECT_EQ(o4.recipe.ropes, o5.recipe.ropes);
  const std::string qwen =
      R"({"model_type":"qwen3_moe","hidden_size":2048,"intermediate_size":6144,"moe_intermediate_size":768,)"
      R"("num_hidden_layers":48,"num_attention_heads":32,"num_key_value_heads":4,"head_dim":128,)"
      R"("vocab_size":151936,"num_experts_per_tok":8,"norm_topk_prob":true,"decoder_sparse_step":1,)"
      R"("mlp_only_layers":[],"use_sliding_window":false,"sliding_window":null,"max_window_layers":48,)";
  const ModelConfig q4 =
      parse_model_config(qwen + R"("num_experts":128,"rope_theta":1000000.0,"rope_scaling":null})", "c");
  const ModelConfig q5 = parse_model_config(
      qwen + R"("num_local_experts":128,"rope_parameters":{"rope_type":"default","rope_theta":1000000.0}})", "c");
  for (const ModelConfig* c : {&q4, &q5}) {
    EXPECT_EQ(c->q_dim(), 4096);
    EXPECT_EQ(c->recipe.moe.experts, 128);
    EXPECT_EQ(c->recipe.moe.intermediate, 768);
    EXPECT_TRUE(c->recipe.moe.renormalize);
    EXPECT_EQ(c->recipe.ropes.at(0).theta, 1000000.0);
    for (const LayerRecipe& l : c->recipe.layers) EXPECT_TRUE(l.sparse_mlp && l.window == 0);
  }
  EXPECT_EQ(q4.recipe.ropes, q5.recipe.ropes);
}

TEST(ConfigJson, RejectsBadConfigsNamingTheField) {
  EXPECT_NE(error_of(R"({"model_type":"rwkv"})").find("unsupported model_type 'rwkv' (supported: llama, mistral, "),
            std::string::npos);
  // Each refusal of a model names the route that remains: a dump of its arrays, then metrics.
  EXPECT_NE(error_of(R"({"model_type":"rwkv"})").find("attngeom.write_dump, then attngeom metrics"), std::string::npos);
  EXPECT_NE(error_of(R"({"model_type":"granitemoe","num_local_experts":40})").find("then attngeom metrics"),
            std::string::npos);
  EXPECT_NE(error_of("{oops").find("malformed JSON"), std::string::npos);
  EXPECT_NE(error_of(R"({"model_type":"llama","hidden_size":64})").find("intermediate_size"), std::string::npos);
  const std::string llama =
      R"({"model_type":"llama","hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,"vocab_size":100,)";
  EXPECT_NE(error_of(llama + R"("num_attention_heads":4,"num_key_value_heads":3})").find("num_key_value_heads"),
            std::string::npos);
  EXPECT_NE(error_of(llama + R"("num_attention_heads":-4})").find("num_attention_heads"), std::string::npos);
  EXPECT_EQ(error_of(llama + R"("num_attention_heads":4})"), "");
}

}  // namespace
}  // namespace attngeom
