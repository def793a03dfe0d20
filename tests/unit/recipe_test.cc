#include "model/recipe.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "io/config_json.h"
#include "model/moe_routing.h"
#include "model/weights.h"
#include "util/error.h"

namespace attngeom {
namespace {

std::string sizes(int layers) {
  return R"("hidden_size":64,"intermediate_size":128,"num_attention_heads":4,"num_key_value_heads":2,"head_dim":16,)"
         R"("vocab_size":100,"num_hidden_layers":)" +
         std::to_string(layers);
}

ModelConfig parse(const std::string& model_type, int layers, const std::string& extra = "") {
  return parse_model_config(R"({"model_type":")" + model_type + R"(",)" + sizes(layers) + extra + "}", "config.json");
}

std::vector<int> windows(const ModelConfig& c) {
  std::vector<int> out;
  for (const LayerRecipe& l : c.recipe.layers) out.push_back(l.window);
  return out;
}

std::vector<int> rope_tables(const ModelConfig& c) {
  std::vector<int> out;
  for (const LayerRecipe& l : c.recipe.layers) out.push_back(l.rope_table);
  return out;
}

TEST(Recipe, Llama3RopeKeepsShortWavelengthsSlowsLongOnesAndBlendsBetween) {
  RopeSpec plain;
  plain.theta = 500000.0;
  RopeSpec llama3 = plain;
  llama3.type = RopeType::kLlama3;
  llama3.factor = 8;
  llama3.low_freq_factor = 1;
  llama3.high_freq_factor = 4;
  llama3.original_max_positions = 8192;
  const std::vector<double> base = rope_inv_freq(plain, 128, 1);
  const std::vector<double> scaled = rope_inv_freq(llama3, 128, 1);
  ASSERT_EQ(scaled.size(), 64u);
  int kept = 0, slowed = 0, blended = 0;
  for (std::size_t i = 0; i < base.size(); ++i) {
    EXPECT_DOUBLE_EQ(base[i], 1.0 / std::pow(500000.0, 2.0 * static_cast<double>(i) / 128));
    const double wavelen = 2 * std::numbers::pi / base[i];
    if (wavelen < 8192.0 / 4) {
      EXPECT_EQ(scaled[i], base[i]);
      ++kept;
    } else if (wavelen > 8192.0) {
      EXPECT_DOUBLE_EQ(scaled[i], base[i] / 8);
      ++slowed;
    } else {
      EXPECT_LT(scaled[i], base[i]);
      EXPECT_GT(scaled[i], base[i] / 8);
      ++blended;
    }
  }
  EXPECT_GT(kept, 0);
  EXPECT_GT(slowed, 0);
  EXPECT_GT(blended, 0);
  RopeSpec linear = plain;
  linear.type = RopeType::kLinear;
  linear.factor = 4;
  EXPECT_DOUBLE_EQ(rope_inv_freq(linear, 128, 1)[5], base[5] / 4);
}

// _compute_longrope_parameters: the short factors up to the pretrained length, the long ones past it.
TEST(Recipe, LongRopeDividesByShortOrLongFactorsBySequenceLength) {
  RopeSpec longrope;
  longrope.type = RopeType::kLongRope;
  longrope.theta = 10000.0;
  longrope.original_max_positions = 256;
  longrope.short_factor = {1.0, 2.0};
  longrope.long_factor = {3.0, 5.0};
  for (const int seq : {256, 257}) {
    const std::vector<double> f = rope_inv_freq(longrope, 4, seq);
    const std::vector<double>& ext = seq > 256 ? longrope.long_factor : longrope.short_factor;
    ASSERT_EQ(f.size(), 2u);
    EXPECT_DOUBLE_EQ(f[0], 1.0 / ext[0]);
    EXPECT_DOUBLE_EQ(f[1], 1.0 / (ext[1] * std::pow(10000.0, 0.5)));
  }
}

TEST(Recipe, FamiliesMapTheirQuirks) {
  const ModelConfig qwen2 = parse("qwen2", 2, R"(,"tie_word_embeddings":true,"sliding_window":8)");
  EXPECT_TRUE(qwen2.recipe.qkv_bias);
  EXPECT_FALSE(qwen2.recipe.o_bias);
  EXPECT_TRUE(qwen2.tie_embeddings);
  EXPECT_EQ(windows(qwen2), (std::vector<int>{0, 0}));  // use_sliding_window false: no window
  const ModelConfig qwen2_windowed =
      parse("qwen2", 4, R"(,"use_sliding_window":true,"sliding_window":8,"max_window_layers":2)");
  EXPECT_EQ(windows(qwen2_windowed), (std::vector<int>{0, 0, 8, 8}));

  const ModelConfig qwen3 = parse("qwen3", 2, R"(,"attention_bias":true)");
  EXPECT_EQ(qwen3.recipe.qk_norm, QkNorm::kPerHead);
  EXPECT_TRUE(qwen3.recipe.qkv_bias && qwen3.recipe.o_bias);
  EXPECT_FLOAT_EQ(qwen3.recipe.attn_scale, 0.25f);
  EXPECT_EQ(
      parse_model_config(R"({"model_type":"qwen3","hidden_size":64,"intermediate_size":128,)"
                         R"("num_attention_heads":4,"num_key_value_heads":2,"vocab_size":100,"num_hidden_layers":1})",
                         "config.json")
          .head_dim,
      128);  // Qwen3Config's default, not hidden / heads

  const ModelConfig gemma2 = parse("gemma2", 4, R"(,"sliding_window":16,"query_pre_attn_scalar":64)");
  EXPECT_EQ(windows(gemma2), (std::vector<int>{16, 0, 16, 0}));  // even layers slide
  EXPECT_FLOAT_EQ(gemma2.recipe.attn_scale, 0.125f);
  EXPECT_FLOAT_EQ(gemma2.recipe.attn_softcap, 50.0f);  // Gemma2Config defaults
  EXPECT_FLOAT_EQ(gemma2.recipe.final_softcap, 30.0f);
  EXPECT_EQ(gemma2.recipe.norms.mlp_input, std::string("pre_feedforward_layernorm.weight"));
  EXPECT_EQ(gemma2.sliding_window, 0);  // not shared by every layer
  const ModelConfig gemma2_typed = parse(
      "gemma2", 3,
      R"(,"sliding_window":16,"attn_logit_softcapping":null,"layer_types":["full_attention","sliding_attention","full_attention"])");
  EXPECT_EQ(windows(gemma2_typed), (std::vector<int>{0, 16, 0}));
  EXPECT_EQ(gemma2_typed.recipe.attn_softcap, 0.0f);

  const ModelConfig olmo2 = parse("olmo2", 1);
  EXPECT_EQ(olmo2.recipe.qk_norm, QkNorm::kWholeProjection);
  EXPECT_EQ(std::string(olmo2.recipe.norms.attn_input), "");
  EXPECT_EQ(olmo2.rms_norm_eps, 1e-5f);

  const ModelConfig mistral = parse("mistral", 2, R"(,"sliding_window":32)");
  EXPECT_EQ(mistral.sliding_window, 32);
}

TEST(Recipe, Gemma3UsesLocalRopeOnSlidingLayersAndScaledRopeOnGlobalOnes) {
  const ModelConfig c = parse("gemma3_text", 7,
                              R"(,"sliding_window":8,"rope_theta":1000000.0,"rope_local_base_freq":10000.0,)"
                              R"("rope_scaling":{"rope_type":"linear","factor":8.0})");
  EXPECT_EQ(windows(c), (std::vector<int>{8, 8, 8, 8, 8, 0, 8}));  // every 6th layer is global
  ASSERT_EQ(c.recipe.ropes.size(), 2u);
  const std::vector<int> tables = rope_tables(c);
  const RopeSpec& local = c.recipe.ropes[static_cast<std::size_t>(tables[0])];
  const RopeSpec& global = c.recipe.ropes[static_cast<std::size_t>(tables[5])];
  EXPECT_EQ(local.type, RopeType::kDefault);
  EXPECT_EQ(local.theta, 10000.0);
  EXPECT_EQ(global.type, RopeType::kLinear);
  EXPECT_EQ(global.theta, 1e6);
  EXPECT_EQ(c.recipe.qk_norm, QkNorm::kPerHead);
  EXPECT_EQ(c.recipe.attn_softcap, 0.0f);
  EXPECT_EQ(c.recipe.weight_prefix, "");
  EXPECT_EQ(windows(parse("gemma3_text", 4, R"(,"sliding_window":8,"sliding_window_pattern":2)")),
            (std::vector<int>{8, 0, 8, 0}));
  EXPECT_EQ(windows(parse("gemma2", 4, R"(,"sliding_window":8,"sliding_window_pattern":3)")),
            (std::vector<int>{8, 0, 8, 0}));  // Gemma2Config has no such key
}

TEST(Recipe, Gemma3MultimodalReadsTheTextTowerWithItsClassDefaults) {
  const ModelConfig c =
      parse_model_config(R"({"model_type":"gemma3","torch_dtype":"bfloat16","text_config":{"model_type":"gemma3_text",)"
                         R"("hidden_size":2560,"intermediate_size":10240,"num_hidden_layers":34,"sliding_window":1024,)"
                         R"("rope_scaling":{"factor":8.0,"rope_type":"linear"}},"vision_config":{"hidden_size":1152}})",
                         "config.json");
  EXPECT_EQ(c.recipe.weight_prefix, "language_model.");
  EXPECT_EQ(c.heads, 8);
  EXPECT_EQ(c.kv_heads, 4);
  EXPECT_EQ(c.head_dim, 256);
  EXPECT_EQ(c.vocab, 262208);
  EXPECT_TRUE(c.tie_embeddings);
  EXPECT_EQ(c.torch_dtype, "bfloat16");
  EXPECT_FLOAT_EQ(c.recipe.attn_scale, 1.0f / 16);
  const ModelConfig v5 =
      parse_model_config(R"({"model_type":"gemma3","text_config":{"num_hidden_layers":6,"rope_parameters":{)"
                         R"("full_attention":{"rope_type":"linear","factor":4.0,"rope_theta":1000000.0},)"
                         R"("sliding_attention":{"rope_type":"default","rope_theta":10000.0}}}})",
                         "config.json");
  EXPECT_EQ(v5.recipe.ropes.at(static_cast<std::size_t>(v5.recipe.layers[5].rope_table)).factor, 4.0);
  EXPECT_EQ(v5.recipe.ropes.at(static_cast<std::size_t>(v5.recipe.layers[0].rope_table)).theta, 10000.0);
}

TEST(Recipe, RefusalsNameTheField) {
  const auto message = [](const std::string& json) {
    try {
      parse_model_config(json, "config.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string base = R"({"model_type":"gemma2",)" + sizes(2);
  EXPECT_NE(message(base + R"(,"layer_types":["sliding_attention"]})").find("field 'layer_types'"), std::string::npos);
  EXPECT_NE(message(base + R"(,"layer_types":["chunked_attention","full_attention"]})").find("chunked_attention"),
            std::string::npos);
  EXPECT_NE(message(R"({"model_type":"gemma3","text_config":{"num_local_experts":4}})")
                .find("field 'text_config.num_local_experts'"),
            std::string::npos);
  EXPECT_NE(message(R"({"model_type":"gemma3"})").find("field 'text_config'"), std::string::npos);
  EXPECT_NE(message(R"({"model_type":"gemma3","text_config":{"rope_scaling":{"rope_type":"yarn","factor":2}}})")
                .find("field 'text_config.rope_scaling.rope_type' 'yarn' is not supported"),
            std::string::npos);
  // Other mixtures of experts: refused naming the field, whatever model_type says.
  EXPECT_NE(message(R"({"model_type":"qwen2_moe","num_experts":60})").find("field 'num_experts'"), std::string::npos);
  EXPECT_NE(message(R"({"model_type":"mixtral",)" + sizes(2) + R"(,"num_experts":8})").find("field 'num_experts'"),
            std::string::npos);
  EXPECT_NE(message(R"({"model_type":"mixtral",)" + sizes(2) + R"(,"num_local_experts":2,"num_experts_per_tok":3})")
                .find("field 'num_experts_per_tok'"),
            std::string::npos);
}

// MixtralConfig: 8 experts, top-2, renormalised, Mistral's window on every layer; its
// tensors are the router and each expert's w1, w3, w2 in place of the dense MLP.
TEST(Recipe, MixtralRoutesEveryLayerThroughExperts) {
  const ModelConfig mixtral = parse("mixtral", 2, R"(,"sliding_window":32,"num_local_experts":4)");
  EXPECT_EQ(mixtral.recipe.moe.experts, 4);
  EXPECT_EQ(mixtral.recipe.moe.top_k, 2);
  EXPECT_TRUE(mixtral.recipe.moe.renormalize);
  EXPECT_EQ(windows(mixtral), (std::vector<int>{32, 32}));
  for (const LayerRecipe& l : mixtral.recipe.layers) EXPECT_TRUE(l.sparse_mlp);
  EXPECT_EQ(parse("mixtral", 1).recipe.moe.experts, 8);       // the class default
  EXPECT_EQ(parse("mixtral", 1).recipe.layers[0].window, 0);  // sliding_window absent: null
  int experts = 0;
  bool dense = false;
  for (const WeightSlot& slot : weight_slots(mixtral)) {
    dense |= slot.name.find("mlp.") != std::string::npos;
    if (slot.role == TensorRole::kExpertUp) ++experts;
    if (slot.layer == 1 && slot.role == TensorRole::kExpertDown && slot.expert == 3) {
      EXPECT_EQ(slot.name, "model.layers.1.block_sparse_moe.experts.3.w2.weight");
      EXPECT_EQ(slot.shape, (std::vector<std::int64_t>{64, 128}));
    }
    if (slot.layer == 0 && slot.role == TensorRole::kRouter) {
      EXPECT_EQ(slot.name, "model.layers.0.block_sparse_moe.gate.weight");
    }
  }
  EXPECT_EQ(experts, 8);
  EXPECT_FALSE(dense);
}

// softmax over the experts, the top_k largest (ties to the lower index), renormalised or not.
TEST(MoeRouting, TopKOfTheSoftmaxWithTiesToTheLowerExpert) {
  // token 0: experts 2 and 0 lead; token 1: experts 1 and 3 tie above the rest
  const std::vector<float> logits = {1.0f, -1.0f, 2.0f, 0.0f, 0.0f, 0.5f, -3.0f, 0.5f};
  ExpertRoutes routes;
  route_tokens(logits, {4, 2, true}, routes);
  EXPECT_EQ(routes.rows, (std::vector<std::vector<int>>{{0}, {1}, {0}, {1}}));
  const double e = std::exp(1.0);
  EXPECT_FLOAT_EQ(routes.weights[2][0], static_cast<float>(e / (e + 1)));
  EXPECT_FLOAT_EQ(routes.weights[0][0], static_cast<float>(1 / (e + 1)));
  EXPECT_FLOAT_EQ(routes.weights[1][0], 0.5f);
  // three-way tie at the top for top-1: expert 1 (the lowest of the three)
  route_tokens(std::vector<float>{0.0f, 3.0f, 3.0f, 3.0f}, {4, 1, false}, routes);
  EXPECT_EQ(routes.rows, (std::vector<std::vector<int>>{{}, {0}, {}, {}}));
  // without renormalisation the weight is the probability itself
  const double p = std::exp(3.0) / (1 + 3 * std::exp(3.0));
  EXPECT_FLOAT_EQ(routes.weights[1][0], static_cast<float>(p));
}

// Each token's experts, largest weight first; a flip is a different set, not a different order.
TEST(MoeRouting, ChoicesInWeightOrderAndFlipsCountDifferentSets) {
  const MoeRecipe moe{4, 2, true};
  ExpertRoutes fast, exact;
  // token 0: {2, 0} in both (order of the two kept weights swapped); token 1: {1, 3} vs {1, 2}
  route_tokens(std::vector<float>{1.0f, -1.0f, 2.0f, 0.0f, 0.0f, 0.7f, -3.0f, 0.5f}, moe, fast);
  route_tokens(std::vector<float>{2.5f, -1.0f, 2.0f, 0.0f, 0.0f, 0.7f, 0.6f, 0.5f}, moe, exact);
  EXPECT_EQ(fast.choices, (std::vector<int>{2, 0, 1, 3}));
  EXPECT_EQ(exact.choices, (std::vector<int>{0, 2, 1, 2}));
  EXPECT_GT(fast.choice_weights[0], fast.choice_weights[1]);
  std::vector<int> flipped;
  EXPECT_EQ(routing_flips(fast, exact, moe.top_k, flipped), 1);
  EXPECT_EQ(flipped, (std::vector<int>{0, 1}));
  EXPECT_EQ(routing_flips(fast, fast, moe.top_k, flipped), 0);
}

}  // namespace
}  // namespace attngeom
