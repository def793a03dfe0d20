// RoPE frequencies and attention factors (model/recipe.h rope_inv_freq, io/config_json.cc's
// rope settings) against the closed forms of transformers' modeling_rope_utils.py, and the
// families whose sliding layers take another RoPE than their full ones.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>
#include <utility>
#include <vector>

#include "io/config_json.h"
#include "model/recipe.h"
#include "model/weights.h"
#include "util/error.h"

namespace attngeom {
namespace {

std::vector<double> plain_inv_freq(double theta, int dim) {
  std::vector<double> out;
  for (int i = 0; i < dim / 2; ++i) out.push_back(1.0 / std::pow(theta, 2.0 * i / dim));
  return out;
}

ModelConfig parse(const std::string& model_type, int layers, const std::string& extra) {
  return parse_model_config(R"({"model_type":")" + model_type +
                                R"(","hidden_size":64,"intermediate_size":128,"num_attention_heads":4,)"
                                R"("num_key_value_heads":2,"head_dim":16,"vocab_size":100,"num_hidden_layers":)" +
                                std::to_string(layers) + extra + "}",
                            "config.json");
}

const RopeSpec& rope_of_layer(const ModelConfig& c, int layer) {
  return c.recipe.ropes.at(static_cast<std::size_t>(c.recipe.layers.at(static_cast<std::size_t>(layer)).rope_table));
}

std::string error_of(const std::string& extra) {
  try {
    parse("llama", 1, extra);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Rope, Llama3RopeKeepsShortWavelengthsSlowsLongOnesAndBlendsBetween) {
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
TEST(Rope, LongRopeDividesByShortOrLongFactorsBySequenceLength) {
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

// _compute_yarn_parameters with head_dim 16, theta 10000, 2048 pretrained positions: beta_fast
// 32 rotations fall at index 16 ln(2048 / 64 pi) / (2 ln 10000) = 2.016, beta_slow 1 at 5.026;
// rounded outwards to [2, 6], the ramp (i - 2) / 4 divides frequencies 6 and 7 by the factor,
// keeps 0 to 2, and blends 3 to 5. Unrounded (truncate false), the band is [2.016, 5.026].
TEST(Rope, YarnKeepsFastFrequenciesDividesSlowOnesAndBlendsTheBand) {
  RopeSpec yarn;
  yarn.type = RopeType::kYarn;
  yarn.theta = 10000.0;
  yarn.factor = 4;
  yarn.original_max_positions = 2048;
  const std::vector<double> base = plain_inv_freq(10000.0, 16);
  const std::vector<double> f = rope_inv_freq(yarn, 16, 1);
  ASSERT_EQ(f.size(), 8u);
  const double ramp[8] = {0, 0, 0, 0.25, 0.5, 0.75, 1, 1};
  for (std::size_t i = 0; i < 8; ++i) {
    EXPECT_NEAR(f[i], base[i] * (1 - ramp[i]) + base[i] / 4 * ramp[i], 1e-15 * base[i]) << i;
  }
  yarn.truncate = false;
  const double low = 16 * std::log(2048 / (64 * std::numbers::pi)) / (2 * std::log(10000.0));
  const double high = 16 * std::log(2048 / (2 * std::numbers::pi)) / (2 * std::log(10000.0));
  EXPECT_NEAR(low, 2.016, 1e-3);
  EXPECT_NEAR(high, 5.026, 1e-3);
  const std::vector<double> untruncated = rope_inv_freq(yarn, 16, 1);
  EXPECT_EQ(untruncated[2], base[2]);
  const double share = (4 - low) / (high - low);
  EXPECT_NEAR(untruncated[4], base[4] * (1 - share) + base[4] / 4 * share, 1e-15 * base[4]);
  EXPECT_NEAR(untruncated[6], base[6] / 4, 1e-15 * base[6]);
  // beta_fast and beta_slow equal: a band of no width at index 3.5, a step there (HF widens it
  // by 0.001 rather than divide by zero).
  yarn.beta_fast = yarn.beta_slow = 2048 / (2 * std::numbers::pi * std::pow(10000.0, 2 * 3.5 / 16));
  const std::vector<double> step = rope_inv_freq(yarn, 16, 1);
  EXPECT_EQ(step[3], base[3]);
  EXPECT_NEAR(step[4], base[4] / 4, 1e-15 * base[4]);
}

// The attention factor of yarn's cos and sin, and the settings transformers leaves implicit.
TEST(Rope, YarnReadsItsSettingsAndDerivesTheAttentionFactor) {
  const auto rope = [](const std::string& scaling, const std::string& top = R"(,"max_position_embeddings":8192)") {
    const ModelConfig c = parse("llama", 1, top + R"(,"rope_theta":500000.0,"rope_scaling":)" + scaling);
    EXPECT_EQ(c.recipe.ropes.size(), 1u);
    return c.recipe.ropes.at(0);
  };
  const RopeSpec plain = rope(R"({"rope_type":"yarn","factor":4.0,"original_max_position_embeddings":2048})");
  EXPECT_EQ(plain.type, RopeType::kYarn);
  EXPECT_EQ(plain.factor, 4.0);
  EXPECT_EQ(plain.original_max_positions, 2048.0);
  EXPECT_EQ(plain.beta_fast, 32.0);
  EXPECT_EQ(plain.beta_slow, 1.0);
  EXPECT_TRUE(plain.truncate);
  EXPECT_DOUBLE_EQ(plain.attention_factor, 0.1 * std::log(4.0) + 1);
  // DeepSeek: (0.1 mscale ln s + 1) / (0.1 mscale_all_dim ln s + 1).
  const RopeSpec deepseek =
      rope(R"({"type":"yarn","factor":8.0,"mscale":1.0,"mscale_all_dim":0.5,"beta_fast":16,"beta_slow":0,)"
           R"("truncate":false})");
  EXPECT_DOUBLE_EQ(deepseek.attention_factor, (0.1 * std::log(8.0) + 1) / (0.05 * std::log(8.0) + 1));
  EXPECT_EQ(deepseek.original_max_positions, 8192.0);  // max_position_embeddings
  EXPECT_EQ(deepseek.beta_fast, 16.0);
  EXPECT_EQ(deepseek.beta_slow, 1.0);  // HF's `or`: 0 means the default
  EXPECT_FALSE(deepseek.truncate);
  EXPECT_FLOAT_EQ(rope(R"({"rope_type":"yarn","factor":2.0,"attention_factor":0.7})").attention_factor, 0.7f);
  EXPECT_EQ(rope(R"({"rope_type":"yarn","factor":0.5})").attention_factor, 1.0);
  // transformers 5.x: without factor, the context extension max_position_embeddings / original.
  EXPECT_EQ(rope(R"({"rope_type":"yarn","original_max_position_embeddings":2048})").factor, 4.0);

  EXPECT_NE(error_of(R"(,"rope_scaling":{"rope_type":"yarn","factor":4.0})").find("field 'max_position_embeddings'"),
            std::string::npos);
  EXPECT_NE(error_of(R"(,"rope_scaling":{"rope_type":"yarn","factor":4.0,"beta_fast":-1})")
                .find("field 'rope_scaling.beta_fast'"),
            std::string::npos);
  EXPECT_NE(error_of(R"(,"rope_scaling":{"rope_type":"yarn","factor":4.0,"truncate":1})")
                .find("field 'rope_scaling.truncate'"),
            std::string::npos);
}

// Olmo3Model (transformers 4.57): three sliding layers to one full by default; rope_scaling on
// the full layers, plain RoPE at rope_theta on the sliding ones, in either config layout.
TEST(Rope, Olmo3ScalesTheRopeOfItsFullLayersOnly) {
  const std::string yarn = R"({"rope_type":"yarn","factor":8.0,"original_max_position_embeddings":8192})";
  const ModelConfig v4 =
      parse("olmo3", 8, R"(,"max_position_embeddings":65536,"rope_theta":500000.0,"rope_scaling":)" + yarn);
  std::vector<int> windows;
  for (const LayerRecipe& l : v4.recipe.layers) windows.push_back(l.window);
  EXPECT_EQ(windows, (std::vector<int>{4096, 4096, 4096, 0, 4096, 4096, 4096, 0}));
  EXPECT_EQ(v4.recipe.qk_norm, QkNorm::kWholeProjection);
  EXPECT_EQ(std::string(v4.recipe.norms.attn_input), "");
  ASSERT_EQ(v4.recipe.ropes.size(), 2u);
  EXPECT_EQ(rope_of_layer(v4, 0).type, RopeType::kDefault);
  EXPECT_EQ(rope_of_layer(v4, 0).theta, 500000.0);
  EXPECT_EQ(rope_of_layer(v4, 0).attention_factor, 1.0);
  EXPECT_EQ(rope_of_layer(v4, 3).type, RopeType::kYarn);
  EXPECT_EQ(rope_of_layer(v4, 3).factor, 8.0);

  const std::string full =
      R"("rope_type":"yarn","rope_theta":500000.0,"factor":8.0,"original_max_position_embeddings":8192)";
  const std::string types = R"(,"layer_types":["sliding_attention","full_attention"])";
  for (const std::string& params : {R"(,"rope_parameters":{"full_attention":{)" + full +
                                        R"(},"sliding_attention":{"rope_type":"default","rope_theta":500000.0}})",
                                    R"(,"rope_parameters":{)" + full + "}"}) {
    const ModelConfig v5 = parse("olmo3", 2, R"(,"max_position_embeddings":65536)" + types + params);
    EXPECT_EQ(rope_of_layer(v5, 0).type, RopeType::kDefault) << params;
    EXPECT_EQ(rope_of_layer(v5, 0).theta, 500000.0) << params;
    EXPECT_EQ(rope_of_layer(v5, 1).type, RopeType::kYarn) << params;
    EXPECT_EQ(rope_of_layer(v5, 1).original_max_positions, 8192.0) << params;
    EXPECT_EQ(v5.recipe.layers[0].window, 4096);
    EXPECT_EQ(v5.recipe.layers[1].window, 0);
  }
}

// SmolLM3Config: NoPE on every fourth layer unless no_rope_layers says which; windows only with
// use_sliding_window, on the NoPE layers unless layer_types says which.
TEST(Rope, Smollm3LeavesItsNoPeLayersUnrotatedAndWindowsOnlyThem) {
  const auto tables = [](const ModelConfig& c) {
    std::vector<int> out;
    for (const LayerRecipe& l : c.recipe.layers) out.push_back(l.rope_table);
    return out;
  };
  const auto windows = [](const ModelConfig& c) {
    std::vector<int> out;
    for (const LayerRecipe& l : c.recipe.layers) out.push_back(l.window);
    return out;
  };
  const ModelConfig plain = parse("smollm3", 8, R"(,"bos_token_id":1,"sliding_window":64)");
  EXPECT_EQ(tables(plain), (std::vector<int>{0, 0, 0, -1, 0, 0, 0, -1}));
  EXPECT_EQ(windows(plain), (std::vector<int>(8, 0)));  // use_sliding_window false
  EXPECT_EQ(plain.recipe.ropes.at(0).theta, 2e6);
  EXPECT_TRUE(plain.tie_embeddings);
  EXPECT_EQ(plain.kv_heads, 2);
  const ModelConfig listed = parse("smollm3", 4,
                                   R"(,"bos_token_id":1,"no_rope_layers":[1,0,1,0,1],"use_sliding_window":true,)"
                                   R"("sliding_window":64)");
  EXPECT_EQ(tables(listed), (std::vector<int>{0, -1, 0, -1}));
  EXPECT_EQ(windows(listed), (std::vector<int>{0, 64, 0, 64}));
  const ModelConfig typed =
      parse("smollm3", 4,
            R"(,"bos_token_id":1,"no_rope_layer_interval":2,"use_sliding_window":true,"sliding_window":64,)"
            R"("layer_types":["sliding_attention","full_attention","full_attention","full_attention"])");
  EXPECT_EQ(tables(typed), (std::vector<int>{0, -1, 0, -1}));
  EXPECT_EQ(windows(typed), (std::vector<int>{64, 0, 0, 0}));
  const std::pair<const char*, const char*> refused[] = {
      {R"(,"no_rope_layers":[1,0])", "no_rope_layers"},
      {R"(,"no_rope_layers":[1,2,1,1])", "no_rope_layers"},
      // eager and sdpa would slide layer 0 by its type, flash attention would not
      {R"(,"sliding_window":64,"layer_types":["sliding_attention","full_attention","full_attention","full_attention"])",
       "layer_types"}};
  for (const auto& [bad, field] : refused) {
    try {
      parse("smollm3", 4, std::string(R"(,"bos_token_id":1)") + bad);
      ADD_FAILURE() << bad;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("field '") + field + "'"), std::string::npos) << e.what();
    }
  }
}

// GPTJConfig as GPT-J-6B's config.json writes it: GPT-2's keys, rotary_dim 64 of head_dim 256.
TEST(Rope, GptjRotatesAdjacentPairsOfItsFirstRotaryDimChannels) {
  const std::string gptj =
      R"({"model_type":"gptj","n_embd":4096,"n_head":16,"n_layer":28,"n_positions":2048,"vocab_size":50400,)"
      R"("n_inner":null,"activation_function":"gelu_new","layer_norm_epsilon":1e-05,"tie_word_embeddings":false)";
  const ModelConfig c = parse_model_config(gptj + R"(,"rotary_dim":64})", "config.json");
  EXPECT_EQ(c.head_dim, 256);
  EXPECT_EQ(c.intermediate, 4 * 4096);
  EXPECT_EQ(c.recipe.rotary_dim, 64);
  EXPECT_TRUE(c.recipe.interleaved_rope);
  EXPECT_TRUE(c.recipe.parallel_residual);
  EXPECT_TRUE(c.recipe.lm_head_bias && c.recipe.mlp_bias);
  EXPECT_FALSE(c.recipe.qkv_bias || c.recipe.o_bias);
  EXPECT_EQ(c.recipe.norm_kind, NormKind::kLayer);
  EXPECT_EQ(c.recipe.ropes.at(0).theta, 10000.0);
  EXPECT_FALSE(c.tie_embeddings);
  EXPECT_EQ(c.bos_token_id, 50256);
  std::vector<std::string> names;
  for (const WeightSlot& slot : weight_slots(c)) {
    if (slot.layer <= 0) names.push_back(slot.name);
  }
  for (const char* name : {"transformer.wte.weight", "transformer.h.0.ln_1.bias", "transformer.h.0.attn.q_proj.weight",
                           "transformer.h.0.attn.out_proj.weight", "transformer.h.0.mlp.fc_in.bias",
                           "transformer.h.0.mlp.fc_out.weight", "transformer.ln_f.weight", "lm_head.bias"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  }
  EXPECT_EQ(parse_model_config(gptj + "}", "config.json").recipe.rotary_dim, 64);  // GPTJConfig's default
  for (const char* bad : {R"(,"rotary_dim":null})", R"(,"rotary_dim":300})", R"(,"rotary_dim":7})"}) {
    try {
      parse_model_config(gptj + bad, "config.json");
      ADD_FAILURE() << bad;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("field 'rotary_dim'"), std::string::npos) << e.what();
    }
  }
}

// HF GPT-J's rotate_every_two rotates channels (2i, 2i + 1) by angle i; arrange_weights moves
// them to rows i and i + R / 2, where rotate_half's pairs are: every score q.k is then the same.
TEST(Rope, InterleavedPairsReorderedAsHalvesGiveTheSameScores) {
  constexpr int kDim = 6, kRotary = 4;
  ModelConfig c = parse("llama", 1, "");
  c.heads = c.kv_heads = 1;
  c.head_dim = kDim;
  c.recipe.rotary_dim = kRotary;
  c.recipe.interleaved_rope = true;
  const std::vector<float> q = {0.3f, -1.2f, 0.7f, 2.0f, -0.4f, 0.9f};  // q_proj [6, 1]: q = W * 1
  const std::vector<float> k = {1.1f, 0.5f, -0.8f, 0.2f, 1.7f, -0.6f};
  Weights w;
  w.layers.resize(1);
  w.layers[0].q_proj = {"q_proj", DType::kF32, kDim, 1, q.data()};
  w.layers[0].k_proj = {"k_proj", DType::kF32, kDim, 1, k.data()};
  arrange_weights(c, w);
  const auto rows = [](const TensorView& v) {
    const auto* p = static_cast<const float*>(v.data);
    return std::vector<double>(p, p + v.rows);
  };
  const std::vector<double> q2 = rows(w.layers[0].q_proj), k2 = rows(w.layers[0].k_proj);
  EXPECT_EQ(q2, (std::vector<double>{q[0], q[2], q[1], q[3], q[4], q[5]}));
  const std::vector<double> inv_freq = plain_inv_freq(10000.0, kRotary);
  for (const int position : {0, 1, 7, 300}) {
    // rotate_every_two: (x[2i], x[2i+1]) -> (x[2i] cos - x[2i+1] sin, x[2i+1] cos + x[2i] sin)
    // rotate_half:      (x[i], x[i+R/2]) -> the same, with the pair at i and i + R / 2.
    const auto rotated = [&](std::vector<double> x, bool interleaved) {
      for (int i = 0; i < kRotary / 2; ++i) {
        const double a = position * inv_freq[static_cast<std::size_t>(i)];
        const auto first = static_cast<std::size_t>(interleaved ? 2 * i : i);
        const auto second = static_cast<std::size_t>(interleaved ? 2 * i + 1 : i + kRotary / 2);
        const double u = x[first], v = x[second];
        x[first] = u * std::cos(a) - v * std::sin(a);
        x[second] = v * std::cos(a) + u * std::sin(a);
      }
      return x;
    };
    const auto dot = [](const std::vector<double>& a, const std::vector<double>& b) {
      double sum = 0;
      for (std::size_t i = 0; i < a.size(); ++i) sum += a[i] * b[i];
      return sum;
    };
    const std::vector<double> q1(q.begin(), q.end()), k1(k.begin(), k.end());
    EXPECT_NEAR(dot(rotated(q2, false), rotated(k2, false)), dot(rotated(q1, true), rotated(k1, true)), 1e-12)
        << position;
  }
}

}  // namespace
}  // namespace attngeom
