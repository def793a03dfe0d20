#include "model/recipe.h"

#include <gtest/gtest.h>

#include <cmath>

#include "model/moe_routing.h"
#include "recipe_test_util.h"

namespace attngeom {
namespace {

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
  const auto message = refusal;
  const std::string base = R"({"model_type":"gemma2",)" + sizes(2);
  EXPECT_NE(message(base + R"(,"layer_types":["sliding_attention"]})").find("field 'layer_types'"), std::string::npos);
  EXPECT_NE(message(base + R"(,"layer_types":["chunked_attention","full_attention"]})").find("chunked_attention"),
            std::string::npos);
  EXPECT_NE(message(R"({"model_type":"gemma3","text_config":{"num_local_experts":4}})")
                .find("field 'text_config.num_local_experts'"),
            std::string::npos);
  EXPECT_NE(message(R"({"model_type":"gemma3"})").find("field 'text_config'"), std::string::npos);
  EXPECT_NE(message(R"({"model_type":"gemma3","text_config":{"rope_scaling":{"rope_type":"dynamic","factor":2}}})")
                .find("field 'text_config.rope_scaling.rope_type' 'dynamic' is not supported"),
            std::string::npos);
  // Other mixtures of experts: refused naming the field, whatever model_type says.
  EXPECT_NE(message(R"({"model_type":"granitemoe","num_local_experts":40})").find("field 'num_local_experts'"),
            std::string::npos);
  EXPECT_NE(message(R"({"model_type":"mixtral",)" + sizes(2) + R"(,"num_experts":8})").find("field 'num_experts'"),
            std::string::npos);
  EXPECT_NE(message(R"({"model_type":"mixtral",)" + sizes(2) + R"(,"num_local_experts":2,"num_experts_per_tok":3})")
                .find("field 'num_experts_per_tok'"),
            std::string::npos);
  EXPECT_NE(message(R"({"model_type":"deepseek_v3","n_routed_experts":256})").find("unsupported model_type"),
            std::string::npos);
  // MLA attention (DeepSeek-V2/V3) and linear or hybrid attention (Qwen3-Next, Jamba, Falcon-H1).
  for (const std::string type : {"deepseek_v2", "qwen3_next", "jamba", "falcon_h1"}) {
    EXPECT_NE(message(R"({"model_type":")" + type + R"(",)" + sizes(2) + R"(,"kv_lora_rank":16})")
                  .find("unsupported model_type '" + type + "'"),
              std::string::npos)
        << type;
  }
  EXPECT_NE(
      message(R"({"model_type":"olmoe",)" + sizes(2) + R"(,"num_local_experts":8})").find("field 'num_local_experts'"),
      std::string::npos);
  // A q/k/v clamp where the family has none, Qwen3-MoE's window, malformed sparse-layer lists.
  EXPECT_NE(message(R"({"model_type":"qwen3_moe",)" + sizes(2) + R"(,"clip_qkv":8.0})").find("field 'clip_qkv'"),
            std::string::npos);
  EXPECT_EQ(message(R"({"model_type":"olmoe",)" + sizes(2) + R"(,"clip_qkv":null})"), "");
  const std::string qwen3_moe = R"({"model_type":"qwen3_moe",)" + sizes(4);
  EXPECT_NE(
      message(qwen3_moe + R"(,"use_sliding_window":true,"sliding_window":16})").find("field 'use_sliding_window'"),
      std::string::npos);
  EXPECT_NE(message(qwen3_moe + R"(,"mlp_only_layers":[4]})").find("field 'mlp_only_layers'"), std::string::npos);
  EXPECT_NE(message(qwen3_moe + R"(,"mlp_only_layers":3})").find("field 'mlp_only_layers'"), std::string::npos);
  EXPECT_NE(message(qwen3_moe + R"(,"decoder_sparse_step":0})").find("field 'decoder_sparse_step'"), std::string::npos);
  EXPECT_NE(message(qwen3_moe + R"(,"num_experts":4,"num_experts_per_tok":5})").find("field 'num_experts_per_tok'"),
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
  EXPECT_EQ(count_slots(mixtral, TensorRole::kExpertUp), 8);
  EXPECT_EQ(count_names(mixtral, "mlp."), 0);
  EXPECT_EQ(slot_of(mixtral, 1, TensorRole::kExpertDown, 3),
            "model.layers.1.block_sparse_moe.experts.3.w2.weight 64x128");
  EXPECT_EQ(slot_of(mixtral, 0, TensorRole::kRouter), "model.layers.0.block_sparse_moe.gate.weight 4x64");
}

// OlmoeConfig: 64 experts, top-8, renormalised only with norm_topk_prob; q/k RMSNorm over the whole
// projection (OLMo-2's) in LLaMA's pre-norm layer; every layer sparse, no window.
TEST(Recipe, OlmoeRoutesEveryLayerAndRenormalisesOnlyWithNormTopkProb) {
  const ModelConfig olmoe = parse("olmoe", 2, R"(,"num_experts":4,"num_experts_per_tok":3,"attention_bias":true)");
  EXPECT_EQ(olmoe.recipe.moe.experts, 4);
  EXPECT_EQ(olmoe.recipe.moe.top_k, 3);
  EXPECT_FALSE(olmoe.recipe.moe.renormalize);
  EXPECT_EQ(olmoe.recipe.moe.intermediate, 128);  // intermediate_size: each expert's width
  EXPECT_EQ(olmoe.recipe.qk_norm, QkNorm::kWholeProjection);
  EXPECT_TRUE(olmoe.recipe.qkv_bias && olmoe.recipe.o_bias);
  EXPECT_EQ(windows(olmoe), (std::vector<int>{0, 0}));
  for (const LayerRecipe& l : olmoe.recipe.layers) EXPECT_TRUE(l.sparse_mlp);
  EXPECT_TRUE(parse("olmoe", 1, R"(,"norm_topk_prob":true)").recipe.moe.renormalize);
  const ModelConfig defaults = parse("olmoe", 1);
  EXPECT_EQ(defaults.recipe.moe.experts, 64);
  EXPECT_EQ(defaults.recipe.moe.top_k, 8);
  EXPECT_FLOAT_EQ(defaults.rms_norm_eps, 1e-5f);
  EXPECT_EQ(count_slots(olmoe, TensorRole::kExpertGate), 8);
  EXPECT_EQ(count_names(olmoe, "mlp.gate_proj"), 0);
  EXPECT_EQ(slot_of(olmoe, 1, TensorRole::kExpertDown, 3), "model.layers.1.mlp.experts.3.down_proj.weight 64x128");
  EXPECT_EQ(slot_of(olmoe, 0, TensorRole::kRouter), "model.layers.0.mlp.gate.weight 4x64");
  EXPECT_EQ(slot_of(olmoe, 0, TensorRole::kQNorm), "model.layers.0.self_attn.q_norm.weight 64");
  EXPECT_EQ(slot_of(olmoe, 0, TensorRole::kKNorm), "model.layers.0.self_attn.k_norm.weight 32");
}

// Qwen3MoeDecoderLayer: sparse iff not in mlp_only_layers and (l + 1) % decoder_sparse_step == 0;
// experts of moe_intermediate_size there, the dense MLP of intermediate_size elsewhere.
TEST(Recipe, Qwen3MoeChoosesSparseLayersByStepAndListWithTwoWidths) {
  const ModelConfig q = parse("qwen3_moe", 6,
                              R"(,"num_experts":4,"num_experts_per_tok":2,"moe_intermediate_size":32,)"
                              R"("decoder_sparse_step":2,"mlp_only_layers":[3],"norm_topk_prob":true)");
  std::vector<bool> sparse;
  for (const LayerRecipe& l : q.recipe.layers) sparse.push_back(l.sparse_mlp);
  EXPECT_EQ(sparse, (std::vector<bool>{false, true, false, false, false, true}));
  EXPECT_EQ(q.recipe.moe.intermediate, 32);
  EXPECT_EQ(q.intermediate, 128);
  EXPECT_TRUE(q.recipe.moe.renormalize);
  EXPECT_EQ(q.recipe.qk_norm, QkNorm::kPerHead);
  EXPECT_EQ(windows(q), (std::vector<int>(6, 0)));
  std::vector<int> dense_layers, sparse_layers;
  for (int l = 0; l < q.layers; ++l) {
    const std::string down = slot_of(q, l, TensorRole::kDownProj);
    if (!down.empty()) {
      dense_layers.push_back(l);
      EXPECT_EQ(down, "model.layers." + std::to_string(l) + ".mlp.down_proj.weight 64x128");
    }
    if (!slot_of(q, l, TensorRole::kRouter).empty()) sparse_layers.push_back(l);
  }
  EXPECT_EQ(dense_layers, (std::vector<int>{0, 2, 3, 4}));
  EXPECT_EQ(sparse_layers, (std::vector<int>{1, 5}));
  EXPECT_EQ(slot_of(q, 5, TensorRole::kExpertUp, 2), "model.layers.5.mlp.experts.2.up_proj.weight 32x64");
  EXPECT_EQ(slot_of(q, 0, TensorRole::kQNorm), "model.layers.0.self_attn.q_norm.weight 16");
  // Qwen3MoeConfig's defaults: 128 experts of 768, top-8, not renormalised, every layer sparse
  const ModelConfig defaults = parse("qwen3_moe", 2);
  EXPECT_EQ(defaults.recipe.moe.experts, 128);
  EXPECT_EQ(defaults.recipe.moe.top_k, 8);
  EXPECT_EQ(defaults.recipe.moe.intermediate, 768);
  EXPECT_FALSE(defaults.recipe.moe.renormalize);
  EXPECT_TRUE(defaults.recipe.layers[0].sparse_mlp && defaults.recipe.layers[1].sparse_mlp);
  // transformers 5.x writes the count as num_local_experts; num_experts 0: every layer dense
  EXPECT_EQ(parse("qwen3_moe", 1, R"(,"num_local_experts":6,"num_experts_per_tok":2)").recipe.moe.experts, 6);
  EXPECT_FALSE(parse("qwen3_moe", 1, R"(,"num_experts":0)").recipe.layers[0].sparse_mlp);
  EXPECT_FALSE(parse("qwen3_moe", 1, R"(,"use_sliding_window":false,"sliding_window":16)").recipe.layers[0].window);
}

// Qwen2MoeConfig: Qwen3-MoE's choice of sparse layers, q/k/v biases, and on every sparse layer
// a shared expert of its own width with a one-row gate beside the routed experts.
TEST(Recipe, Qwen2MoeAddsASharedExpertToItsSparseLayers) {
  const ModelConfig q = parse("qwen2_moe", 4,
                              R"(,"num_experts":4,"num_experts_per_tok":2,"moe_intermediate_size":32,)"
                              R"("shared_expert_intermediate_size":48,"decoder_sparse_step":2)");
  EXPECT_EQ(q.recipe.moe.shared_intermediate, 48);
  EXPECT_FALSE(q.recipe.moe.renormalize);
  EXPECT_TRUE(q.recipe.qkv_bias);
  EXPECT_FALSE(q.recipe.o_bias);
  EXPECT_EQ(slot_of(q, 1, TensorRole::kSharedExpertGateProj),
            "model.layers.1.mlp.shared_expert.gate_proj.weight 48x64");
  EXPECT_EQ(slot_of(q, 1, TensorRole::kSharedExpertDownProj),
            "model.layers.1.mlp.shared_expert.down_proj.weight 64x48");
  EXPECT_EQ(slot_of(q, 3, TensorRole::kSharedExpertGate), "model.layers.3.mlp.shared_expert_gate.weight 1x64");
  EXPECT_EQ(slot_of(q, 3, TensorRole::kExpertGate, 3), "model.layers.3.mlp.experts.3.gate_proj.weight 32x64");
  EXPECT_EQ(slot_of(q, 0, TensorRole::kSharedExpertGate), "");  // dense layer
  EXPECT_EQ(slot_of(q, 0, TensorRole::kDownProj), "model.layers.0.mlp.down_proj.weight 64x128");
  EXPECT_EQ(count_slots(q, TensorRole::kSharedExpertUpProj), 2);
  EXPECT_EQ(count_slots(q, TensorRole::kQBias), 4);
  EXPECT_EQ(count_slots(parse("qwen2_moe", 4, R"(,"qkv_bias":false)"), TensorRole::kQBias), 0);
  // Qwen2MoeConfig's defaults: 60 experts of 1408, top-4, a shared expert of 5632.
  const ModelConfig defaults = parse("qwen2_moe", 1);
  EXPECT_EQ(defaults.recipe.moe.experts, 60);
  EXPECT_EQ(defaults.recipe.moe.top_k, 4);
  EXPECT_EQ(defaults.recipe.moe.intermediate, 1408);
  EXPECT_EQ(defaults.recipe.moe.shared_intermediate, 5632);
  // Other mixtures have no shared expert.
  EXPECT_EQ(parse("qwen3_moe", 1).recipe.moe.shared_intermediate, 0);
  EXPECT_EQ(count_slots(parse("qwen3_moe", 1), TensorRole::kSharedExpertGate), 0);
}

// transformers 5.x's fused experts (save_original_format=False): the router under mlp.gate, all
// experts' [gate | up] and down in two 3-D tensors; split at load into per-expert views.
TEST(Recipe, FusedExpertsAreTwoTensorsPerLayerSplitIntoViews) {
  ModelConfig mixtral = parse("mixtral", 1, R"(,"num_local_experts":3)");
  mixtral.recipe.fused_experts = true;
  EXPECT_EQ(slot_of(mixtral, 0, TensorRole::kRouter), "model.layers.0.mlp.gate.weight 3x64");
  EXPECT_EQ(slot_of(mixtral, 0, TensorRole::kExpertsGateUp), "model.layers.0.mlp.experts.gate_up_proj 3x256x64");
  EXPECT_EQ(slot_of(mixtral, 0, TensorRole::kExpertsDown), "model.layers.0.mlp.experts.down_proj 3x64x128");
  EXPECT_EQ(count_slots(mixtral, TensorRole::kExpertGate), 0);
  // 3 experts of width 2 over hidden 4: gate_up [3 * 4, 4], down [3 * 4, 2], as bound from the file
  ModelConfig small = mixtral;
  small.hidden = 4;
  small.recipe.moe.intermediate = 2;
  std::vector<float> gate_up(3 * 4 * 4), down(3 * 4 * 2);
  Weights w;
  w.layers.resize(1);
  w.layers[0].experts_gate_up = {"gate_up_proj", DType::kF32, 12, 4, gate_up.data()};
  w.layers[0].experts_down = {"down_proj", DType::kF32, 12, 2, down.data()};
  arrange_weights(small, w);
  ASSERT_EQ(w.layers[0].experts.size(), 3u);
  const ExpertTensors<TensorView>& e1 = w.layers[0].experts[1];
  EXPECT_EQ(e1.gate_proj.data, gate_up.data() + 4 * 4);  // expert 1's rows 4, 5 (gate), then 6, 7 (up)
  EXPECT_EQ(e1.up_proj.data, gate_up.data() + 6 * 4);
  EXPECT_EQ(e1.down_proj.data, down.data() + 4 * 2);
  EXPECT_EQ(e1.gate_proj.rows, 2);
  EXPECT_EQ(e1.up_proj.cols, 4);
  EXPECT_EQ(e1.down_proj.rows, 4);
  EXPECT_EQ(e1.down_proj.cols, 2);
  EXPECT_TRUE(w.derived.empty());  // views into the stored tensors, nothing copied
}

// softmax over the experts, the top_k largest (ties to the lower index), renormalised or not.
TEST(MoeRouting, TopKOfTheSoftmaxWithTiesToTheLowerExpert) {
  // token 0: experts 2 and 0 lead; token 1: experts 1 and 3 tie above the rest
  const std::vector<float> logits = {1.0f, -1.0f, 2.0f, 0.0f, 0.0f, 0.5f, -3.0f, 0.5f};
  ExpertRoutes routes;
  route_tokens(logits, {4, 2, true, 0}, routes);
  EXPECT_EQ(routes.rows, (std::vector<std::vector<int>>{{0}, {1}, {0}, {1}}));
  const double e = std::exp(1.0);
  EXPECT_FLOAT_EQ(routes.weights[2][0], static_cast<float>(e / (e + 1)));
  EXPECT_FLOAT_EQ(routes.weights[0][0], static_cast<float>(1 / (e + 1)));
  EXPECT_FLOAT_EQ(routes.weights[1][0], 0.5f);
  // three-way tie at the top for top-1: expert 1 (the lowest of the three)
  route_tokens(std::vector<float>{0.0f, 3.0f, 3.0f, 3.0f}, {4, 1, false, 0}, routes);
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