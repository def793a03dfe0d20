// The families with ALiBi position biases, BLOOM and MPT: their slopes against MPT's own form of
// the rule, and their recipes read from configs as their released checkpoints write them.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "recipe_test_util.h"

namespace attngeom {
namespace {

// HF MPT gen_slopes, written from its definition: the slopes of the next power of two P,
// 2^(-k bias_max / P), the odd positions first, then the even ones, the first `heads` kept.
std::vector<double> mpt_slopes(int heads, double bias_max) {
  int p = 1;
  while (p < heads) p *= 2;
  std::vector<double> all;
  for (int k = 1; k <= p; ++k) all.push_back(std::pow(2.0, -k * bias_max / p));
  if (p == heads) return all;
  std::vector<double> reordered;
  for (std::size_t i = 1; i < all.size(); i += 2) reordered.push_back(all[i]);
  for (std::size_t i = 0; i < all.size(); i += 2) reordered.push_back(all[i]);
  reordered.resize(static_cast<std::size_t>(heads));
  return reordered;
}

TEST(AlibiSlopes, BloomsRuleEqualsMptsForEveryHeadCount) {
  // BLOOM with 6 heads: 2^(-8k/4) for k = 1..4, then 2^(-4k/4) for k = 1, 3.
  EXPECT_EQ(alibi_slopes(6), (std::vector<float>{0.25f, 0.0625f, 0.015625f, 0.00390625f, 0.5f, 0.125f}));
  EXPECT_EQ(alibi_slopes(1), std::vector<float>{0.00390625f});
  for (int heads = 1; heads <= 160; ++heads) {
    const std::vector<float> got = alibi_slopes(heads);
    const std::vector<double> want = mpt_slopes(heads, 8);
    ASSERT_EQ(got.size(), want.size()) << heads;
    for (std::size_t h = 0; h < got.size(); ++h) {
      EXPECT_EQ(got[h], static_cast<float>(want[h])) << heads << " heads, head " << h;
    }
  }
}

// BloomConfig as bigscience/bloom-560m's config.json writes it (n_head, n_layer; bloom-7b1 and
// the 176B model write n_embed for hidden_size).
TEST(Recipe, BloomNormsItsEmbeddingsAndBiasesItsScoresByAlibi) {
  const std::string bloom =
      R"({"model_type":"bloom","n_layer":2,"n_head":16,"vocab_size":250880,"layer_norm_epsilon":1e-05,)"
      R"("bos_token_id":1,"n_inner":null,"pretraining_tp":1,"slow_but_exact":false,"offset_alibi":100)";
  for (const std::string size : {R"("hidden_size":1024)", R"("n_embed":1024)"}) {
    const ModelConfig c = parse_model_config(bloom + "," + size + "}", "config.json");
    EXPECT_EQ(c.hidden, 1024);
    EXPECT_EQ(c.head_dim, 64);
    EXPECT_EQ(c.intermediate, 4096);
    EXPECT_EQ(c.recipe.alibi_slopes, alibi_slopes(16));
    EXPECT_EQ(rope_tables(c), (std::vector<int>{-1, -1}));
    EXPECT_TRUE(c.recipe.ropes.empty());
    EXPECT_EQ(c.recipe.activation, Activation::kGeluTanh);
    EXPECT_EQ(c.recipe.attn_scale, 0.125f);
    EXPECT_TRUE(c.recipe.qkv_bias && c.recipe.o_bias && c.recipe.mlp_bias);
    EXPECT_TRUE(c.tie_embeddings);
    EXPECT_EQ(c.bos_token_id, 1);
  }
  const ModelConfig c = parse_model_config(bloom + R"(,"hidden_size":1024})", "config.json");
  EXPECT_EQ(slot_of(c, -1, TensorRole::kEmbedNorm), "transformer.word_embeddings_layernorm.weight 1024");
  EXPECT_EQ(slot_of(c, -1, TensorRole::kEmbedNormBias), "transformer.word_embeddings_layernorm.bias 1024");
  EXPECT_EQ(slot_of(c, 1, TensorRole::kQkvProj), "transformer.h.1.self_attention.query_key_value.weight 3072x1024");
  EXPECT_EQ(slot_of(c, 1, TensorRole::kQkvBias), "transformer.h.1.self_attention.query_key_value.bias 3072");
  EXPECT_EQ(slot_of(c, 0, TensorRole::kMlpInputNormBias), "transformer.h.0.post_attention_layernorm.bias 1024");
  EXPECT_EQ(slot_of(c, 0, TensorRole::kDownBias), "transformer.h.0.mlp.dense_4h_to_h.bias 1024");
  EXPECT_EQ(slot_of(c, -1, TensorRole::kFinalNormBias), "transformer.ln_f.bias 1024");
  EXPECT_EQ(count_slots(c, TensorRole::kLmHead), 0);
  EXPECT_EQ(count_slots(c, TensorRole::kPositionEmbed), 0);
  EXPECT_NE(refusal(bloom + R"(,"hidden_size":1024,"apply_residual_connection_post_layernorm":true})")
                .find("field 'apply_residual_connection_post_layernorm'"),
            std::string::npos);
  // slow_but_exact with pretraining_tp > 1 drops two biases in BloomAttention and BloomMLP.
  std::string exact = bloom + R"(,"hidden_size":1024})";
  exact.replace(exact.find(R"("slow_but_exact":false)"), 22, R"("slow_but_exact":true)");
  EXPECT_EQ(refusal(exact), "");
  exact.replace(exact.find(R"("pretraining_tp":1)"), 18, R"("pretraining_tp":4)");
  EXPECT_NE(refusal(exact).find("field 'slow_but_exact'"), std::string::npos);
}

// MptConfig as mosaicml/mpt-7b's config.json writes it: d_model, n_heads, n_layers, the
// attention's switches under attn_config; no biases anywhere, LayerNorms without one.
TEST(Recipe, MptReadsItsAttnConfigAndHasNoBiases) {
  const std::string mpt =
      R"({"model_type":"mpt","d_model":4096,"n_heads":32,"n_layers":2,"expansion_ratio":4,"max_seq_len":2048,)"
      R"("vocab_size":50432,"no_bias":true,"norm_type":"low_precision_layernorm","learned_pos_emb":true,)"
      R"("logit_scale":null,"attn_config":{"alibi":true,"alibi_bias_max":8,"attn_impl":"torch","attn_pdrop":0,)"
      R"("attn_type":"multihead_attention","attn_uses_sequence_id":false,"clip_qkv":null,"prefix_lm":false,)"
      R"("qk_ln":false,"softmax_scale":null)";
  const ModelConfig c = parse_model_config(mpt + "}}", "config.json");
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.intermediate, 16384);
  EXPECT_EQ(c.rms_norm_eps, 1e-5f);
  EXPECT_EQ(c.recipe.alibi_slopes, alibi_slopes(32));
  EXPECT_FLOAT_EQ(c.recipe.attn_scale, 1.0f / std::sqrt(128.0f));
  EXPECT_EQ(c.recipe.activation, Activation::kGeluErf);
  EXPECT_FALSE(c.recipe.qkv_bias || c.recipe.o_bias || c.recipe.mlp_bias);
  EXPECT_TRUE(c.tie_embeddings);
  EXPECT_EQ(slot_of(c, 1, TensorRole::kQkvProj), "transformer.blocks.1.attn.Wqkv.weight 12288x4096");
  EXPECT_EQ(slot_of(c, 1, TensorRole::kMlpInputNorm), "transformer.blocks.1.norm_2.weight 4096");
  EXPECT_EQ(slot_of(c, 0, TensorRole::kDownProj), "transformer.blocks.0.ffn.down_proj.weight 4096x16384");
  EXPECT_EQ(slot_of(c, -1, TensorRole::kFinalNorm), "transformer.norm_f.weight 4096");
  for (const TensorRole bias : {TensorRole::kAttnInputNormBias, TensorRole::kMlpInputNormBias,
                                TensorRole::kFinalNormBias, TensorRole::kQkvBias, TensorRole::kUpBias}) {
    EXPECT_EQ(count_slots(c, bias), 0);
  }
  EXPECT_EQ(count_slots(c, TensorRole::kLmHead), 0);

  // The config with one field's text replaced.
  const auto edited = [&](const std::string& from, const std::string& to) {
    std::string json = mpt + "}}";
    return json.replace(json.find(from), from.size(), to);
  };
  const auto config = [&](const std::string& from, const std::string& to) {
    return parse_model_config(edited(from, to), "config.json");
  };
  EXPECT_FLOAT_EQ(config(R"("softmax_scale":null)", R"("softmax_scale":0.1)").recipe.attn_scale, 0.1f);
  EXPECT_EQ(config(R"("clip_qkv":null)", R"("clip_qkv":6)").recipe.clip_qkv, 6.0f);
  EXPECT_EQ(config(R"("clip_qkv":null)", R"("clip_qkv":0)").recipe.clip_qkv, 0.0f);  // `if self.clip_qkv`
  const std::vector<std::vector<std::string>> refused = {
      {R"("alibi":true)", R"("alibi":false)", "field 'attn_config.alibi'"},
      {R"("alibi_bias_max":8)", R"("alibi_bias_max":16)", "field 'attn_config.alibi_bias_max'"},
      {R"("qk_ln":false)", R"("qk_ln":true)", "field 'attn_config.qk_ln'"},
      {R"("prefix_lm":false)", R"("prefix_lm":true)", "field 'attn_config.prefix_lm'"},
      {R"("clip_qkv":null)", R"("clip_qkv":-6)", "field 'attn_config.clip_qkv'"},
      {R"("multihead_attention")", R"("grouped_query_attention")", "field 'attn_config.attn_type'"},
      {R"("no_bias":true)", R"("no_bias":false)", "field 'no_bias'"},
      {R"("expansion_ratio":4)", R"("expansion_ratio":2)", "field 'expansion_ratio'"},
      {R"("logit_scale":null)", R"("logit_scale":2.0)", "field 'logit_scale'"},
      {R"("low_precision_layernorm")", R"("rmsnorm")", "field 'norm_type'"},
  };
  for (const std::vector<std::string>& r : refused) {
    EXPECT_NE(refusal(edited(r[0], r[1])).find(r[2]), std::string::npos) << r[1];
  }
}

}  // namespace
}  // namespace attngeom
